import { randomBytes } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { sql } from 'kysely'
import { inject } from 'vitest'
import { type DatabaseHandle, openPglite } from '../../db/connect.js'
import { openPostgres } from '../../db/postgres.js'
import { type App, type AppOverrides, buildApp } from '../../src/app.js'
import { loadConfig } from '../../src/config.js'
import { checkResponsesAgainstContract } from './contract.js'

/** Which database this run uses: PostgreSQL when TEST_DATABASE_URL was set, PGlite otherwise. */
const onPostgres = () => inject('postgresTemplate') !== undefined

/**
 * The URL of a new PostgreSQL database for the caller alone, a copy of the run's migrated template;
 * the run drops it at the end. Only on PostgreSQL runs.
 */
export async function newPostgresDatabase(): Promise<string> {
  const template = inject('postgresTemplate')
  if (!template) throw new Error('This run has no PostgreSQL server (TEST_DATABASE_URL is not set)')
  const name = `${template.name}_${randomBytes(6).toString('hex')}`
  const admin = openPostgres({ url: template.adminUrl, poolMax: 1 })
  try {
    await sql`create database ${sql.id(name)} template ${sql.id(template.name)}`.execute(admin.db)
  } finally {
    await admin.close()
  }
  const url = new URL(template.adminUrl)
  url.pathname = `/${name}`
  return url.toString()
}

/** A migrated database for the caller alone, on PostgreSQL or PGlite as the run says. */
export async function openTestDatabase(): Promise<DatabaseHandle> {
  if (onPostgres()) return openPostgres({ url: await newPostgresDatabase(), poolMax: 10 })
  const template = inject('pgliteTemplate')
  if (!template) throw new Error('The global setup prepared no database')
  return openPglite({ loadDataDir: new Blob([await readFile(template)]) })
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
  // Likewise exports: `app.bulkExports.drainOnce()`.
  BULK_EXPORT_WORKER: 'false',
  HOUSEKEEPING_WORKER: 'false', // Tests purge with `app.housekeeping.runOnce()`.
  // A few concurrent sign-ins on a loaded machine can wait seconds for the one hashing thread; the
  // refusal after a wait has tests of its own (sign-in-flood).
  PASSWORD_HASH_WAIT_MS: '30000',
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
