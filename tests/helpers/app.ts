import { readFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { inject } from 'vitest'
import { type DatabaseHandle, openPglite, openPostgres } from '../../db/connect.js'
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

export const testEnvironment = (overrides: Record<string, string> = {}) => ({
  LOG_LEVEL: 'silent',
  MIGRATE_ON_START: 'false',
  DATA_DIR: tmpdir(),
  AUDIT_FLUSH_INTERVAL_MS: '50',
  ...overrides,
})

/**
 * The whole service on this run's database, with every response checked against the contract.
 * `extend` may add test-only routes before the app is sealed; `logStream` receives the log lines.
 */
export async function buildTestApp(
  environment: Record<string, string> = {},
  extend?: (app: App) => void,
  logStream?: AppOverrides['logStream'],
): Promise<App> {
  const app = await buildApp(loadConfig(testEnvironment(environment)), {
    database: await openTestDatabase(),
    logStream,
  })
  checkResponsesAgainstContract(app)
  extend?.(app)
  await app.ready()
  return app
}
