import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { DatabaseHandle } from '../../db/connect.js'
import { openPostgres } from '../../db/postgres.js'
import { startTcpProxy } from '../../scripts/lib/tcp-proxy.js'
import { type App, buildApp } from '../../src/app.js'
import { loadConfig } from '../../src/config.js'
import { newPostgresDatabase, testEnvironment } from '../helpers/app.js'
import { checkResponsesAgainstContract } from '../helpers/contract.js'
import { bearer, newOrganization, patientBody, type TestUser } from '../helpers/factories.js'

// The request budget on the database: a pooled connection within TIMEOUT_MS, a statement within
// TIMEOUT_MS (and a second more for a connection that does not answer at all).
const TIMEOUT_MS = 1000
const POOL_MAX = 4
const BUDGET_MS = 2 * TIMEOUT_MS + 1000 + 800

let app: App
let handle: DatabaseHandle
let databaseUrl: string
let proxy: Awaited<ReturnType<typeof startTcpProxy>>
let user: TestUser
let monitor: DatabaseHandle

// The app's connections carry this name, so that only they are counted on the server.
const APPLICATION_NAME = 'ehr-blackhole-test'

beforeAll(async () => {
  databaseUrl = await newPostgresDatabase()
  const target = new URL(databaseUrl)
  proxy = await startTcpProxy(target.hostname, Number(target.port || 5432))
  const proxied = new URL(target)
  proxied.host = `127.0.0.1:${proxy.port}`
  proxied.searchParams.set('application_name', APPLICATION_NAME)
  monitor = openPostgres({ url: databaseUrl, poolMax: 1 })
  handle = openPostgres({
    url: proxied.toString(),
    poolMax: POOL_MAX,
    statementTimeoutMs: TIMEOUT_MS,
    onPoolError: () => {},
  })
  app = await buildApp(loadConfig(testEnvironment({ DATABASE_QUERY_TIMEOUT_MS: String(TIMEOUT_MS) })), {
    database: handle,
  })
  checkResponsesAgainstContract(app)
  await app.ready()
  user = await (await newOrganization(app)).user('PROVIDER')
})
afterAll(async () => {
  proxy.forward()
  await app.close()
  await monitor.close()
})

async function timed<T>(call: () => Promise<T>): Promise<{ ms: number; result: T }> {
  const started = Date.now()
  const result = await call()
  return { ms: Date.now() - started, result }
}

/**
 * The app's connections open on the server, seen on a connection that bypasses the proxy (one kept
 * open, so that the count never includes a monitoring connection still closing).
 */
async function serverConnections() {
  const { rows } = await sql<{ pid: number; state: string | null; query: string }>`
    select pid, state, left(query, 60) as query from pg_stat_activity
    where datname = current_database() and application_name = ${APPLICATION_NAME}`.execute(monitor.db)
  return rows
}

describe('when the network to the database silently drops everything (a black hole)', () => {
  it('answers every request within its budget, keeps metrics answering, and recovers once it is back', async () => {
    const created = await app.inject({
      method: 'POST',
      url: '/api/patients',
      headers: bearer(user.token),
      payload: patientBody(),
    })
    expect(created.statusCode).toBe(201)
    const patient = created.json().data
    const read = () => app.inject({ url: `/api/patients/${patient.id}`, headers: bearer(user.token) })
    // Warm: a few pooled connections, and backlog figures read once.
    await Promise.all(Array.from({ length: POOL_MAX }, read))
    expect((await app.inject({ url: '/actuator/prometheus' })).statusCode).toBe(200)

    proxy.blackHole()
    const [reads, health] = await Promise.all([
      Promise.all(Array.from({ length: 6 }, () => timed(read))),
      timed(() => app.inject({ url: '/actuator/health' })),
    ])
    for (const { ms, result } of reads) {
      expect(ms).toBeLessThan(BUDGET_MS)
      expect(result.statusCode).toBe(503)
      expect(result.json()).toMatchObject({ success: false, error: { code: 'SYS_002' } })
    }
    expect(health.ms).toBeLessThan(BUDGET_MS)
    expect(health.result.statusCode).toBe(503)
    expect(health.result.json()).toMatchObject({ status: 'DOWN', components: { db: { status: 'DOWN' } } })

    const scrape = await timed(() => app.inject({ url: '/actuator/prometheus' }))
    expect(scrape.ms).toBeLessThan(1000)
    expect(scrape.result.statusCode).toBe(200)
    const readAge = Number(scrape.result.body.match(/^ehr_outbox_backlog_read_age_seconds (\S+)$/m)?.[1])
    expect(readAge).toBeGreaterThanOrEqual(1)
    expect(scrape.result.body).toMatch(/^ehr_outbox_backlog \d+$/m)

    proxy.forward()
    // Connections caught in the black hole are given up, not handed out again.
    const recovered = await timed(read)
    expect(recovered.result.statusCode).toBe(200)
    expect(recovered.result.json().data).toEqual(patient)
    for (const { ms, result } of await Promise.all(Array.from({ length: 10 }, () => timed(read)))) {
      expect(result.statusCode).toBe(200)
      expect(ms).toBeLessThan(BUDGET_MS)
    }
    expect((await app.inject({ url: '/actuator/health' })).statusCode).toBe(200)
    const pool = handle.poolStats()
    expect(pool.total).toBeLessThanOrEqual(POOL_MAX)
    expect(pool.waiting).toBe(0)
    // A failure prints the backends found, with the last statement each ran.
    await expect
      .poll(serverConnections, { timeout: 5000, interval: 100 })
      .toSatisfy((backends: unknown[]) => backends.length <= POOL_MAX)
  }, 30_000)
})
