import { randomBytes } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { sql } from 'kysely'
import { inject } from 'vitest'
import { type DatabaseHandle, openPglite, openPostgres } from '../../db/connect.js'
import { migrateToLatest } from '../../db/migrator.js'
import { type App, type AppOverrides, buildApp } from '../../src/app.js'
import { loadConfig } from '../../src/config.js'
import { checkResponsesAgainstContract } from './contract.js'

/** Which database this run uses: PostgreSQL when TEST_DATABASE_URL was set, PGlite otherwise. */
export const onPostgres = () => inject('testDatabaseUrl') !== undefined

export async function openTestDatabase(): Promise<DatabaseHandle> {
  const url = inject('testDatabaseUrl')
  if (url) return openPostgres({ url, poolMax: 10 })
  const template = inject('pgliteTemplate')
  if (!template) throw new Error('The global setup prepared no database')
  return openPglite({ loadDataDir: new Blob([await readFile(template)]) })
}

/**
 * A database for this test file alone. PGlite files have one anyway; on PostgreSQL, where files
 * share the run's database, a new one is created and migrated, and dropped on close. For tests of
 * the delivery worker, which claims work from every organization in its database.
 */
export async function openOwnTestDatabase(): Promise<{ handle: DatabaseHandle; url: string | undefined }> {
  const runUrl = inject('testDatabaseUrl')
  if (!runUrl) return { handle: await openTestDatabase(), url: undefined }
  const admin = openPostgres({ url: runUrl, poolMax: 1 })
  const name = `ehr_test_own_${randomBytes(6).toString('hex')}`
  await sql`create database ${sql.id(name)}`.execute(admin.db)
  const url = new URL(runUrl)
  url.pathname = `/${name}`
  const handle = openPostgres({ url: url.toString(), poolMax: 10 })
  await migrateToLatest(handle.db)
  const close = handle.close
  handle.close = async () => {
    await close()
    await sql`drop database if exists ${sql.id(name)} with (force)`.execute(admin.db)
    await admin.close()
  }
  return { handle, url: url.toString() }
}

export const TEST_ENCRYPTION_KEY = Buffer.alloc(32, 7).toString('base64')

export const testEnvironment = (overrides: Record<string, string> = {}) => ({
  LOG_LEVEL: 'silent',
  MIGRATE_ON_START: 'false',
  DATA_DIR: tmpdir(),
  AUDIT_FLUSH_INTERVAL_MS: '50',
  ENCRYPTION_KEY: TEST_ENCRYPTION_KEY,
  // Tests drive delivery with `app.outbox.drainOnce()`; the worker's own loop is tested on its own.
  OUTBOX_WORKER: 'false',
  ...overrides,
})

/**
 * The whole service on this run's database, with every response checked against the contract.
 * `extend` may add test-only routes before the app is sealed; `overrides` can bring a database,
 * collect the log lines or stub DNS.
 */
export async function buildTestApp(
  environment: Record<string, string> = {},
  extend?: (app: App) => void,
  overrides: AppOverrides = {},
): Promise<App> {
  const app = await buildApp(loadConfig(testEnvironment(environment)), {
    ...overrides,
    database: overrides.database ?? (await openTestDatabase()),
  })
  checkResponsesAgainstContract(app)
  extend?.(app)
  await app.ready()
  return app
}
