import { type DatabaseHandle, openPglite } from './connect.js'
import type { Db } from './database.js'
import { findTemplate } from './embedded-template.js'
import { migrateToLatest } from './migrator.js'
import type { ReadReplicas } from './replicas.js'

// PostgreSQL's modules (postgres.ts, replicas.ts) are loaded only when DATABASE_URL is set: pg costs
// an embedded start tens of milliseconds to read.

/** The database settings of the configuration (src/config/database.ts). */
export interface DatabaseSettings {
  /** PostgreSQL, pooled; unset: the embedded database. */
  url: string | undefined
  /** A direct connection to the same primary, not through a pooler: DATABASE_DIRECT_URL, else `url`. */
  directUrl: string | undefined
  poolMax: number
  /** The longest a request waits for a pooled connection, and for one statement. */
  queryTimeoutMs: number
  preparedStatements: number
  /** Read replicas of `url`; empty: none. */
  readUrls: readonly string[]
  replicaMaxLagMs: number
  replicaCheckIntervalMs: number
  /** The embedded database's data directory. */
  embeddedDir: string
  embeddedSharedBuffersMb: number
  migrateOnStart: boolean
}

/** A pool of its own for long reads, with its own statement limit. */
interface PoolSettings {
  poolMax: number
  statementTimeoutMs: number
}

export interface PrimaryOptions {
  onPoolError(error: Error): void
  /** Where a new embedded database's template is looked for (db/embedded-template.ts); else initdb. */
  templateCache?: string
  /** Told, before the embedded database opens, whether it is created from the template. */
  onEmbeddedOpen?(fromTemplate: boolean): void
}

/** The primary database: PostgreSQL when `url` is set, else the embedded one. */
export async function openPrimaryDatabase(
  settings: DatabaseSettings,
  options: PrimaryOptions,
): Promise<DatabaseHandle> {
  if (!settings.url) {
    const template = findTemplate(options.templateCache)
    options.onEmbeddedOpen?.(template !== undefined)
    return openPglite({
      dataDir: settings.embeddedDir,
      template,
      sharedBuffersMb: settings.embeddedSharedBuffersMb,
    })
  }
  const { openPostgres } = await import('./postgres.js')
  return openPostgres({
    url: settings.url,
    directUrl: settings.directUrl,
    poolMax: settings.poolMax,
    preparedStatements: settings.preparedStatements,
    statementTimeoutMs: settings.queryTimeoutMs,
    onPoolError: options.onPoolError,
  })
}

export interface Databases {
  primary: DatabaseHandle
  /** Read replicas of a PostgreSQL primary, if any, pooled and checked like it. */
  replicas: ReadReplicas | undefined
  /**
   * Where bulk exports read: on PostgreSQL a pool of their own on the direct connection (behind a
   * pooler its statement limit would cut exports short of their own), closed with `close`; on the
   * embedded database its one connection.
   */
  exports: { db: Db; close: (() => Promise<void>) | undefined }
}

export interface DatabasesOptions extends Omit<PrimaryOptions, 'onPoolError'> {
  /** An already open primary (tests); otherwise opened from the settings. */
  primary?: DatabaseHandle
  exportPool: PoolSettings
  onPoolError(pool: 'database' | 'export', error: Error): void
}

/** Every database the service reads and writes, opened from the database settings. */
export async function openDatabases(
  settings: DatabaseSettings,
  options: DatabasesOptions,
): Promise<Databases> {
  const primary =
    options.primary ??
    (await openPrimaryDatabase(settings, {
      templateCache: options.templateCache,
      onEmbeddedOpen: options.onEmbeddedOpen,
      onPoolError: (error) => options.onPoolError('database', error),
    }))
  if (!settings.url) return { primary, replicas: undefined, exports: { db: primary.db, close: undefined } }
  const { openPostgres } = await import('./postgres.js')
  const exportPool = openPostgres({
    url: settings.directUrl ?? settings.url,
    poolMax: options.exportPool.poolMax,
    preparedStatements: 0,
    statementTimeoutMs: options.exportPool.statementTimeoutMs,
    onPoolError: (error) => options.onPoolError('export', error),
  })
  return {
    primary,
    replicas: await openReplicas(settings, primary),
    exports: { db: exportPool.db, close: exportPool.close },
  }
}

async function openReplicas(settings: DatabaseSettings, primary: DatabaseHandle) {
  if (settings.readUrls.length === 0 || primary.kind !== 'postgres') return undefined
  const { openReadReplicas } = await import('./replicas.js')
  return openReadReplicas({
    primary,
    urls: [...settings.readUrls],
    maxLagMs: settings.replicaMaxLagMs,
    checkIntervalMs: settings.replicaCheckIntervalMs,
    poolMax: settings.poolMax,
    statementTimeoutMs: settings.queryTimeoutMs,
    preparedStatements: settings.preparedStatements,
  })
}

/**
 * Brings the schema up to date. On PostgreSQL over a connection of its own with no statement
 * limit: a migration may rewrite a large table, far past what a request may wait. Direct, since a
 * pooler in front would impose its own limit.
 */
export async function migrateDatabase(
  settings: DatabaseSettings,
  handle: DatabaseHandle,
  onPending: () => void = () => {},
) {
  if (!settings.url || handle.kind !== 'postgres') return migrateToLatest(handle.db, onPending)
  const { openPostgres } = await import('./postgres.js')
  const unlimited = openPostgres({
    url: settings.directUrl ?? settings.url,
    poolMax: 1,
    statementTimeoutMs: 0,
  })
  try {
    return await migrateToLatest(unlimited.db, onPending)
  } finally {
    await unlimited.close()
  }
}
