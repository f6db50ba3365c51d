import { tmpdir } from 'node:os'
import { sql } from 'kysely'
import type { Db } from '../../db/database.js'
import { migrateToLatest } from '../../db/migrator.js'
import { openPostgres } from '../../db/postgres.js'
import { buildApp } from '../../src/app.js'
import { loadConfig } from '../../src/config.js'
import { BENCH_PASSWORD, type Seeded, seed } from '../bench/seed.js'

const urlOf = (serverUrl: string, name: string) => {
  const url = new URL(serverUrl)
  url.pathname = `/${name}`
  return url.toString()
}

/**
 * The URL of a database `name` on the server `serverUrl` holding the benchmark practice of
 * `patients` (and whatever `more` adds to it): seeded on first use and kept for later runs. It is
 * seeded under another name and renamed when done, so a run cut short leaves no half-seeded database.
 */
export async function seededDatabase(
  serverUrl: string,
  name: string,
  patients: number,
  more?: (db: Db, seeded: Seeded) => Promise<void>,
): Promise<string> {
  const admin = openPostgres({ url: serverUrl, poolMax: 1 })
  try {
    const exists = await sql<{ found: boolean }>`
      select exists (select from pg_database where datname = ${name}) as found`.execute(admin.db)
    if (!exists.rows[0]?.found) {
      const seeding = `${name}_seeding`
      await sql`drop database if exists ${sql.id(seeding)} with (force)`.execute(admin.db)
      await sql`create database ${sql.id(seeding)}`.execute(admin.db)
      // Seeding is a batch job, not a request: a million rows in one statement may well take longer
      // than the service's 30 s statement limit on a busy machine.
      const handle = openPostgres({ url: urlOf(serverUrl, seeding), poolMax: 2, statementTimeoutMs: 0 })
      try {
        await migrateToLatest(handle.db)
        process.stdout.write(`Seeding ${patients} patients…\n`)
        const started = Date.now()
        const seeded = await seed(handle.db, patients)
        await more?.(handle.db, seeded)
        await sql`vacuum analyze`.execute(handle.db)
        process.stdout.write(`  seeded in ${((Date.now() - started) / 1000).toFixed(1)} s\n`)
      } finally {
        await handle.close()
      }
      await sql`alter database ${sql.id(seeding)} rename to ${sql.id(name)}`.execute(admin.db)
    }
  } finally {
    await admin.close()
  }
  // Migrations added since the database was seeded.
  const existing = openPostgres({ url: urlOf(serverUrl, name), poolMax: 1 })
  await migrateToLatest(existing.db)
  await existing.close()
  return urlOf(serverUrl, name)
}

// The seeded databases are kept from run to run, and so is the token-signing key the service stores
// in them, encrypted: a new encryption key per run could not open it, and the next run failed.
const BENCH_ENCRYPTION_KEY = Buffer.alloc(32, 2).toString('base64')

/** The service in this process on a seeded database, and the bearer header of the seeded user. */
export async function seededBenchApp(url: string, settings: Record<string, string> = {}) {
  const app = await buildApp(
    loadConfig({
      DATABASE_URL: url,
      ENCRYPTION_KEY: BENCH_ENCRYPTION_KEY,
      LOG_LEVEL: 'silent',
      DATA_DIR: tmpdir(),
      OUTBOX_WORKER: 'false',
      // No mail leaves a benchmark.
      MAIL_TRANSPORT: 'log',
      ADMIN_PASSWORD: BENCH_PASSWORD,
      // Raised for the run: a benchmark is one client sending far beyond a real user's allowance.
      RATE_LIMIT_AUTHENTICATED: '1000000000',
      ...settings,
    }),
  )
  const login = await app.inject({
    method: 'POST',
    url: '/api/auth/login',
    payload: { username: 'bench@example.test', password: BENCH_PASSWORD },
  })
  if (login.statusCode !== 200) throw new Error(`bench login: ${login.statusCode} ${login.body}`)
  return { app, headers: { authorization: `Bearer ${login.json().data.token as string}` } }
}
