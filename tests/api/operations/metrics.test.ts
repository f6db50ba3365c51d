import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { METRIC } from '../../../src/lib/service-metrics.js'
import { buildTestApp } from '../../helpers/app.js'
import { bearer, newOrganization, TEST_PASSWORD } from '../../helpers/factories.js'

let app: App

beforeAll(async () => {
  // A small anonymous limit, small enough that one test's calls from one address reach a 429.
  app = await buildTestApp({ RATE_LIMIT_ANONYMOUS: '20' })
})
afterAll(async () => {
  await app.close()
})

const scrape = async () => (await app.inject({ url: '/actuator/prometheus' })).body

/** The value of one series, `name{labels}`, or undefined when the scrape does not have it. */
function sample(text: string, name: string, labels = ''): number | undefined {
  const series = labels ? `${name}{${labels}}` : name
  const line = text.split('\n').find((candidate) => candidate.startsWith(`${series} `))
  return line === undefined ? undefined : Number(line.slice(series.length + 1))
}

const login = (username: string, password: string) =>
  app.inject({ method: 'POST', url: '/api/auth/login', payload: { username, password } })

describe('GET /actuator/prometheus', () => {
  it('counts logins by outcome', async () => {
    const user = await (await newOrganization(app)).user('PROVIDER')
    const before = await scrape()
    expect((await login(user.email, TEST_PASSWORD)).statusCode).toBe(200)
    expect((await login(user.email, 'not-the-password-at-all')).statusCode).toBe(401)
    const after = await scrape()
    const delta = (outcome: string) =>
      (sample(after, METRIC.authLogins, `outcome="${outcome}"`) ?? 0) -
      (sample(before, METRIC.authLogins, `outcome="${outcome}"`) ?? 0)
    expect(delta('success')).toBe(1)
    expect(delta('failure')).toBe(1)
  })

  it('counts refused access tokens once per request, by reason', async () => {
    const before = await scrape()
    const response = await app.inject({ url: '/api/patients', headers: bearer('not.a.token') })
    expect(response.statusCode).toBe(401)
    await app.inject({ url: '/api/patients' })
    const after = await scrape()
    const delta = (reason: string) =>
      (sample(after, METRIC.authTokenRejections, `reason="${reason}"`) ?? 0) -
      (sample(before, METRIC.authTokenRejections, `reason="${reason}"`) ?? 0)
    expect(delta('malformed')).toBe(1)
    expect(delta('missing')).toBe(1)
  })

  it('counts a refresh token presented twice', async () => {
    const user = await (await newOrganization(app)).user('PROVIDER')
    const { refreshToken } = (await login(user.email, TEST_PASSWORD)).json().data
    const refresh = () =>
      app.inject({ method: 'POST', url: '/api/auth/refresh', payload: { refresh_token: refreshToken } })
    const before = sample(await scrape(), METRIC.authRefreshReuse) ?? 0
    expect((await refresh()).statusCode).toBe(200)
    expect((await refresh()).statusCode).toBe(400)
    expect(sample(await scrape(), METRIC.authRefreshReuse)).toBe(before + 1)
  })

  it('counts rate-limit rejections by caller kind', async () => {
    const before = sample(await scrape(), METRIC.rateLimitRejections, 'caller="anonymous"') ?? 0
    const statuses: number[] = []
    for (let call = 0; call < 25; call += 1) {
      statuses.push((await app.inject({ url: '/api/patients', remoteAddress: '10.9.8.7' })).statusCode)
    }
    const limited = statuses.filter((status) => status === 429).length
    expect(limited).toBeGreaterThan(0)
    expect(sample(await scrape(), METRIC.rateLimitRejections, 'caller="anonymous"')).toBe(before + limited)
  })

  it('exposes query latency, pool, audit and outbox figures', async () => {
    const user = await (await newOrganization(app)).user('PROVIDER')
    await app.inject({ url: '/api/patients', headers: bearer(user.token) })
    await app.auditLog.flush()
    const text = await scrape()
    expect(sample(text, `${METRIC.dbQueryDuration}_count`, 'outcome="ok"')).toBeGreaterThan(0)
    expect(sample(text, `${METRIC.dbQueryDuration}_count`, 'outcome="error"')).toBeGreaterThanOrEqual(0)
    expect(sample(text, METRIC.dbConnectionErrors)).toBe(0)
    expect(sample(text, METRIC.dbPoolMaxConnections)).toBeGreaterThanOrEqual(1)
    expect(sample(text, METRIC.dbPoolWaitingClients)).toBe(0)
    expect(sample(text, METRIC.auditRecordsFlushed)).toBeGreaterThan(0)
    expect(sample(text, METRIC.auditInserts)).toBeGreaterThan(0)
    expect(sample(text, METRIC.auditInserts)).toBeLessThanOrEqual(
      sample(text, METRIC.auditRecordsFlushed) ?? 0,
    )
    expect(sample(text, METRIC.auditFlushFailures)).toBe(0)
    expect(sample(text, METRIC.auditRecordsDropped)).toBe(0)
    expect(sample(text, METRIC.outboxBacklog)).toBeGreaterThanOrEqual(0)
    expect(sample(text, METRIC.webhooksDeactivated)).toBeGreaterThanOrEqual(0)
  })

  it('labels HTTP latency by route template and status class only', async () => {
    await app.inject({ url: '/api/patients/98765', headers: bearer('x') })
    const text = await scrape()
    const series = text.split('\n').filter((line) => line.startsWith(`${METRIC.httpRequestDuration}_count{`))
    expect(series.length).toBeGreaterThan(0)
    for (const line of series) {
      expect(line).toMatch(
        /^http_request_duration_seconds_count\{method="\w+",route="[^"]*",status_class="[1-5]xx"\}/,
      )
    }
    expect(text).not.toContain('98765')
  })
})
