import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openPostgres } from '../../db/postgres.js'
import { startTcpProxy } from '../../scripts/lib/tcp-proxy.js'
import { type App, buildApp } from '../../src/app.js'
import { loadConfig } from '../../src/config.js'
import { newPostgresDatabase, testEnvironment } from '../helpers/app.js'
import { checkResponsesAgainstContract } from '../helpers/contract.js'
import { bearer, newOrganization, patientBody, type TestUser } from '../helpers/factories.js'

let app: App
let databaseUrl: string
let proxy: Awaited<ReturnType<typeof startTcpProxy>>
let user: TestUser

beforeAll(async () => {
  databaseUrl = await newPostgresDatabase()
  const target = new URL(databaseUrl)
  proxy = await startTcpProxy(target.hostname, Number(target.port || 5432))
  const proxied = new URL(target)
  proxied.host = `127.0.0.1:${proxy.port}`
  app = await buildApp(loadConfig(testEnvironment()), {
    database: openPostgres({ url: proxied.toString(), poolMax: 4, onPoolError: () => {} }),
  })
  checkResponsesAgainstContract(app)
  // A query still running when the connection drops (outside /api: a test-only route).
  app.get('/test/slow-query', async () => {
    await sql`select pg_sleep(3)`.execute(app.db)
    return { done: true }
  })
  await app.ready()
  user = await (await newOrganization(app)).user('PROVIDER')
})
afterAll(async () => {
  await proxy.restore()
  await app.close()
})

/** How many slow test queries the database is running, asked on a connection that bypasses the proxy. */
async function slowQueriesRunning(): Promise<number> {
  const direct = openPostgres({ url: databaseUrl, poolMax: 1 })
  try {
    const { rows } = await sql<{ running: number }>`
      select count(*)::int as running from pg_stat_activity
      where datname = current_database() and state = 'active' and query like 'select pg_sleep(3)%'`.execute(
      direct.db,
    )
    return rows[0]?.running ?? 0
  } finally {
    await direct.close()
  }
}

describe('when the database becomes unreachable', () => {
  it('answers 503 SYS_002 and health DOWN, and recovers with nothing lost once it is back', async () => {
    const created = await app.inject({
      method: 'POST',
      url: '/api/patients',
      headers: bearer(user.token),
      payload: patientBody(),
    })
    expect(created.statusCode).toBe(201)
    const patient = created.json().data

    const connectionErrors = async () =>
      Number(
        (await app.inject({ url: '/actuator/prometheus' })).body.match(
          /^ehr_db_connection_errors_total (\d+)$/m,
        )?.[1],
      )
    const errorsBefore = await connectionErrors()
    await proxy.cut()
    const read = await app.inject({ url: `/api/patients/${patient.id}`, headers: bearer(user.token) })
    expect(read.statusCode).toBe(503)
    expect(read.json()).toMatchObject({ success: false, error: { code: 'SYS_002' } })
    expect(read.body).not.toMatch(/ECONNREFUSED|127\.0\.0\.1/)

    const health = await app.inject({ url: '/actuator/health' })
    expect(health.statusCode).toBe(503)
    expect(health.json()).toMatchObject({
      status: 'DOWN',
      components: { db: { status: 'DOWN' }, ping: { status: 'UP' } },
    })
    expect((await app.inject({ url: '/actuator/health/readiness' })).statusCode).toBe(503)
    expect((await app.inject({ url: '/actuator/health/liveness' })).statusCode).toBe(200)
    expect(await connectionErrors()).toBeGreaterThan(errorsBefore)

    await proxy.restore()
    const again = await app.inject({ url: `/api/patients/${patient.id}`, headers: bearer(user.token) })
    expect(again.statusCode).toBe(200)
    expect(again.json().data).toEqual(patient)
    expect((await app.inject({ url: '/actuator/health' })).statusCode).toBe(200)
  })

  it('fails every waiting and in-flight call fast, keeps their audit records, and needs no restart', async () => {
    const caller = await (await newOrganization(app)).user('PROVIDER')
    const created = await app.inject({
      method: 'POST',
      url: '/api/patients',
      headers: bearer(caller.token),
      payload: patientBody(),
    })
    const patientId = created.json().data.id
    await app.auditLog.flush()

    const inFlight = app.inject({ url: '/test/slow-query' })
    // The query has reached the database before the connection goes (seen past the proxy).
    await expect.poll(slowQueriesRunning, { timeout: 10_000, interval: 20 }).toBeGreaterThan(0)
    const startedAt = Date.now()
    await proxy.cut()
    const calls = await Promise.all([
      inFlight,
      ...Array.from({ length: 8 }, () =>
        app.inject({ url: `/api/patients/${patientId}`, headers: bearer(caller.token) }),
      ),
      app.inject({ url: '/api/patients', headers: bearer(caller.token) }),
    ])
    // Refused connections are reported at once: far below the 3 s query and the 5 s connect timeout.
    expect(Date.now() - startedAt).toBeLessThan(2500)
    for (const call of calls) {
      expect(call.statusCode).toBe(503)
      expect(call.json()).toMatchObject({ success: false, error: { code: 'SYS_002' } })
    }
    // The audit records of the failed calls wait in memory while the database is away.
    await app.auditLog.flush()
    expect(app.auditLog.buffered).toBe(9)

    await proxy.restore()
    await app.auditLog.flush()
    expect(app.auditLog.buffered).toBe(0)
    const audited = await app.db
      .selectFrom('audit_log')
      .select(['outcome', 'status_code'])
      .where('organization_id', '=', caller.organizationId)
      .where('status_code', '=', 503)
      .execute()
    expect(audited).toHaveLength(9)
    expect(new Set(audited.map((row) => row.outcome))).toEqual(new Set(['ERROR']))
    const after = await app.inject({ url: `/api/patients/${patientId}`, headers: bearer(caller.token) })
    expect(after.statusCode).toBe(200)
  })
})
