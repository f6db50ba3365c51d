import { randomInt, randomUUID } from 'node:crypto'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../src/app.js'
import { REDIS_ANSWER_WITHIN_MS } from '../../src/plugins/rate-limit.js'
import { buildTestApp } from '../helpers/app.js'
import { newOrganization, TEST_PASSWORD } from '../helpers/factories.js'
import { type RedisServer, startRedisServer } from '../helpers/servers/redis-server.js'

// A Redis of this file's own, which the tests kill, freeze and restart empty; two instances share it.
let server: RedisServer
let first: App
let second: App

beforeAll(async () => {
  server = await startRedisServer()
  const environment = {
    REDIS_URL: server.url,
    RATE_LIMIT_ANONYMOUS: '5',
    RATE_LIMIT_SIGN_IN_ACCOUNT: '3',
    RATE_LIMIT_SIGN_IN_ADDRESS: '50',
  }
  first = await buildTestApp(environment)
  second = await buildTestApp(environment)
})
afterAll(async () => {
  await first?.close()
  await second?.close()
  await server?.stop()
})

const newAddress = () => `10.${randomInt(256)}.${randomInt(256)}.${randomInt(1, 255)}`
const call = (app: App, remoteAddress: string) => app.inject({ url: '/api/patients', remoteAddress })
const statuses = async (app: App, remoteAddress: string, times: number) => {
  const seen: number[] = []
  for (let i = 0; i < times; i++) seen.push((await call(app, remoteAddress)).statusCode)
  return seen
}

/** Waits until `app` counts in Redis again: a fresh address's request reaches the server. */
async function untilShared(app: App, timeoutMs = 10_000) {
  const client = new Redis(server.url, { maxRetriesPerRequest: 1, lazyConnect: true })
  client.on('error', () => {})
  const deadline = Date.now() + timeoutMs
  try {
    for (;;) {
      const probe = newAddress()
      await call(app, probe)
      const counted = await client.get(`ehr-rate-limit:ip:${probe}`).catch(() => null)
      if (counted !== null) return
      if (Date.now() > deadline) throw new Error('the instance did not count in Redis again')
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  } finally {
    client.disconnect()
  }
}

describe('rate limits across a Redis outage', () => {
  it('count on from what each instance last knew, and restore the counts a restarted Redis lost', async () => {
    const remoteAddress = newAddress()
    // Shared: 3 of the 5 spent through `first`, a 4th through `second` (which sees the count at 4).
    expect(await statuses(first, remoteAddress, 3)).toEqual([401, 401, 401])
    expect(await statuses(second, remoteAddress, 1)).toEqual([401])
    const key = `ehr-rate-limit:ip:${remoteAddress}`
    const client = new Redis(server.url, { maxRetriesPerRequest: 1 })
    client.on('error', () => {})
    const windowLeft = await client.pttl(key)
    const readAt = Date.now()

    await server.kill()
    // Each instance lets through only what it had not seen spent: `second` 1, `first` 2. Its own
    // count never starts again from zero.
    expect(await statuses(second, remoteAddress, 3)).toEqual([401, 429, 429])
    expect(await statuses(first, remoteAddress, 4)).toEqual([401, 401, 429, 429])

    // Redis comes back without its data: the counts are written back from what the instances know.
    await server.restart()
    await untilShared(first)
    await untilShared(second)
    expect((await call(first, remoteAddress)).statusCode).toBe(429)
    expect((await call(second, remoteAddress)).statusCode).toBe(429)
    try {
      expect(Number(await client.get(key))).toBeGreaterThan(5)
      // The restored count keeps the window it had, not a fresh one.
      expect(await client.pttl(key)).toBeLessThanOrEqual(windowLeft - (Date.now() - readAt) + 50)
    } finally {
      client.disconnect()
    }
  })

  it('keep a caller that had spent its limit refused when Redis restarts empty between its requests', async () => {
    const remoteAddress = newAddress()
    expect(await statuses(first, remoteAddress, 6)).toEqual([401, 401, 401, 401, 401, 429])
    await server.restart()
    await untilShared(first)
    expect(await statuses(first, remoteAddress, 2)).toEqual([429, 429])
  })

  it('hold a request no longer than the answer deadline while Redis hangs, and keep counting', async () => {
    const remoteAddress = newAddress()
    expect(await statuses(first, remoteAddress, 3)).toEqual([401, 401, 401])
    server.pause()
    try {
      const started = performance.now()
      const hung = await call(first, remoteAddress)
      const waited = performance.now() - started
      expect(hung.statusCode).toBe(401)
      // The deadline is what the request waited for: not less, and nowhere near half a second.
      expect(waited).toBeGreaterThanOrEqual(REDIS_ANSWER_WITHIN_MS - 5)
      expect(waited).toBeLessThan(400)
      // Counted on locally from 4: one more, then refused; without waiting on Redis again.
      const next = performance.now()
      expect(await statuses(first, remoteAddress, 2)).toEqual([401, 429])
      expect(performance.now() - next).toBeLessThan(400)
    } finally {
      server.resume()
    }
    await untilShared(first)
    expect((await call(first, remoteAddress)).statusCode).toBe(429)
  })
})

describe('sign-in limits across a Redis outage', () => {
  it('keep counting an account’s failures from what the instance knew, and after an empty restart', async () => {
    const org = await newOrganization(first)
    const user = await org.user('PROVIDER')
    const login = (password: string) =>
      first.inject({
        method: 'POST',
        url: '/api/auth/login',
        payload: { username: user.email, password },
        remoteAddress: newAddress(),
      })
    for (let i = 0; i < 2; i++) expect((await login(`wrong-${randomUUID()}`)).statusCode).toBe(401)

    await server.kill()
    expect((await login('wrong-password')).statusCode).toBe(401)
    expect((await login('wrong-password')).statusCode).toBe(429)
    expect((await login(TEST_PASSWORD)).statusCode).toBe(429)

    await server.restart()
    await untilShared(first)
    const refused = await login(TEST_PASSWORD)
    expect(refused.statusCode).toBe(429)
    expect(refused.json()).toMatchObject({ success: false, error: { code: 'RATE_001' } })
  })
})
