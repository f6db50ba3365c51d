import { randomInt } from 'node:crypto'
import { createServer } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { buildTestApp } from '../../helpers/app.js'
import { newOrganization } from '../../helpers/factories.js'

/** A loopback port nothing listens on: opened, then closed again. */
async function closedPort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}

const newAddress = () => `10.${randomInt(256)}.${randomInt(256)}.${randomInt(1, 255)}`
const metric = (scrape: string, name: string) =>
  Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(scrape)?.[1] ?? Number.NaN)

describe('rate limits when Redis (REDIS_URL) cannot be reached', () => {
  let app: App
  const lines: { level: number; msg: string }[] = []

  beforeAll(async () => {
    app = await buildTestApp(
      {
        REDIS_URL: `redis://127.0.0.1:${await closedPort()}`,
        RATE_LIMIT_ANONYMOUS: '2',
        RATE_LIMIT_AUTHENTICATED: '3',
        LOG_LEVEL: 'info',
      },
      undefined,
      { logStream: { write: (line: string) => void lines.push(JSON.parse(line)) } },
    )
  })
  afterAll(async () => {
    await app.close()
  })

  it('counts per instance instead of lifting the limit, with truthful headers', async () => {
    const remoteAddress = newAddress()
    const responses = []
    for (let i = 0; i < 3; i++) responses.push(await app.inject({ url: '/api/patients', remoteAddress }))
    expect(responses.map((response) => response.statusCode)).toEqual([401, 401, 429])
    expect(responses.map((response) => response.headers['x-ratelimit-limit'])).toEqual(['2', '2', '2'])
    expect(responses.slice(0, 2).map((response) => response.headers['x-ratelimit-remaining'])).toEqual([
      '1',
      '0',
    ])
    const now = Math.floor(Date.now() / 1000)
    expect(Number(responses[0]?.headers['x-ratelimit-reset'])).toBeGreaterThan(now + 3500)
    expect(responses[2]?.json()).toMatchObject({ error: { code: 'RATE_001' } })
    expect(Number(responses[2]?.headers['retry-after'])).toBeGreaterThan(3500)
  })

  it('counts a signed-in caller by subject as usual', async () => {
    const user = await (await newOrganization(app)).user('PROVIDER')
    const statuses: number[] = []
    for (let i = 0; i < 4; i++) {
      const response = await app.inject({
        url: '/api/auth/me',
        headers: { authorization: `Bearer ${user.token}` },
        remoteAddress: newAddress(),
      })
      statuses.push(response.statusCode)
    }
    expect(statuses).toEqual([200, 200, 200, 429])
  })

  it('says so once in the log and in the metrics', async () => {
    await app.inject({ url: '/api/patients', remoteAddress: newAddress() })
    const warnings = lines.filter((line) => line.msg.startsWith('rate limit store unreachable'))
    expect(warnings).toHaveLength(1)
    expect(warnings[0]?.level).toBe(40)
    const scrape = (await app.inject({ url: '/actuator/prometheus' })).body
    expect(metric(scrape, 'ehr_rate_limit_fallback_active')).toBe(1)
    expect(metric(scrape, 'ehr_rate_limit_fallback_requests_total')).toBeGreaterThanOrEqual(8)
  })
})

describe('rate limits without REDIS_URL', () => {
  it('report no fallback: counting per instance is the configuration', async () => {
    const app = await buildTestApp()
    try {
      await app.inject({ url: '/api/patients', remoteAddress: newAddress() })
      const scrape = (await app.inject({ url: '/actuator/prometheus' })).body
      expect(metric(scrape, 'ehr_rate_limit_fallback_active')).toBe(0)
      expect(metric(scrape, 'ehr_rate_limit_fallback_requests_total')).toBe(0)
    } finally {
      await app.close()
    }
  })
})

describe('the authorization scheme in any case', () => {
  let app: App

  beforeAll(async () => {
    app = await buildTestApp({ RATE_LIMIT_AUTHENTICATED: '3', RATE_LIMIT_ANONYMOUS: '50' })
  })
  afterAll(async () => {
    await app.close()
  })

  it.each(['bearer', 'BEARER', 'Bearer'])(
    'counts a `%s` token against its subject’s limit, not the address’s anonymous one',
    async (scheme) => {
      const user = await (await newOrganization(app)).user('PROVIDER')
      const remoteAddress = newAddress()
      const responses = []
      for (let i = 0; i < 4; i++) {
        responses.push(
          await app.inject({
            url: '/api/auth/me',
            headers: { authorization: `${scheme} ${user.token}` },
            remoteAddress,
          }),
        )
      }
      expect(responses.map((response) => response.statusCode)).toEqual([200, 200, 200, 429])
      expect(responses[0]?.headers['x-ratelimit-limit']).toBe('3')
      // The address's anonymous allowance is untouched.
      const anonymous = await app.inject({ url: '/api/patients', remoteAddress })
      expect(anonymous.headers['x-ratelimit-remaining']).toBe('49')
    },
  )
})
