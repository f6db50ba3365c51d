import { randomInt } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTcpProxy } from '../../scripts/lib/tcp-proxy.js'
import type { App } from '../../src/app.js'
import { buildTestApp } from '../helpers/app.js'

// Two instances reach the run's Redis through a loopback proxy that the test cuts and restores.
const redisUrl = new URL(process.env.TEST_REDIS_URL as string)
let proxy: Awaited<ReturnType<typeof startTcpProxy>>
let first: App
let second: App

beforeAll(async () => {
  proxy = await startTcpProxy(redisUrl.hostname, Number(redisUrl.port || 6379))
  const viaProxy = new URL(redisUrl)
  viaProxy.hostname = '127.0.0.1'
  viaProxy.port = String(proxy.port)
  const environment = { REDIS_URL: viaProxy.toString(), RATE_LIMIT_ANONYMOUS: '4' }
  first = await buildTestApp(environment)
  second = await buildTestApp(environment)
})
afterAll(async () => {
  await first.close()
  await second.close()
  await proxy.cut()
})

// Both apps register their metrics in prom-client's one registry, so the scrape shows the last built
// (`second`); the test reads the metrics of that one only.
const fallbackActive = async (app: App) =>
  /^ehr_rate_limit_fallback_active 1$/m.test((await app.inject({ url: '/actuator/prometheus' })).body)

async function until(check: () => Promise<boolean>, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('timed out')
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

describe('rate limits when Redis goes away and comes back', () => {
  it('count per instance during the outage, and shared again afterwards', async () => {
    const remoteAddress = `10.${randomInt(256)}.${randomInt(256)}.${randomInt(1, 255)}`
    const call = (app: App) => app.inject({ url: '/api/patients', remoteAddress })

    // Shared: two requests on each instance spend the address's 4 together.
    for (const app of [first, second])
      expect((await call(app)).headers['x-ratelimit-remaining']).toBeDefined()
    expect((await call(first)).headers['x-ratelimit-remaining']).toBe('1')

    await proxy.cut()
    // Each instance now counts alone, on from the count Redis last gave it (2 for `second`): never
    // no limit, and never again from zero.
    const alone: number[] = []
    for (let i = 0; i < 5; i++) alone.push((await call(second)).statusCode)
    expect(alone).toEqual([401, 401, 429, 429, 429])
    const limited = await call(second)
    expect(limited.headers['x-ratelimit-limit']).toBe('4')
    expect(limited.headers['x-ratelimit-remaining']).toBe('0')
    expect(await fallbackActive(second)).toBe(true)

    await proxy.restore()
    // Back on the shared counter, which had 3 of the 4 spent before the outage.
    await until(async () => {
      await call(second)
      return !(await fallbackActive(second))
    })
    // `first` never counted this address on its own: a 429 here comes from the shared counter.
    expect((await call(first)).statusCode).toBe(429)
  })
})
