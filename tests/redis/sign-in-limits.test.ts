import { randomInt } from 'node:crypto'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../src/app.js'
import { buildTestApp } from '../helpers/app.js'
import { newOrganization, TEST_PASSWORD } from '../helpers/factories.js'

const redisUrl = process.env.TEST_REDIS_URL as string
let first: App
let second: App
let redis: Redis

beforeAll(async () => {
  const environment = {
    REDIS_URL: redisUrl,
    RATE_LIMIT_ANONYMOUS: '2',
    RATE_LIMIT_SIGN_IN_ACCOUNT: '3',
    RATE_LIMIT_SIGN_IN_ADDRESS: '5',
  }
  first = await buildTestApp(environment)
  second = await buildTestApp(environment)
  redis = new Redis(redisUrl)
})
afterAll(async () => {
  await first.close()
  await second.close()
  redis.disconnect()
})

const newAddress = () => `10.${randomInt(256)}.${randomInt(256)}.${randomInt(1, 255)}`

const login = (app: App, remoteAddress: string, username: string, password: string) =>
  app.inject({ method: 'POST', url: '/api/auth/login', payload: { username, password }, remoteAddress })

describe('sign-in limits with REDIS_URL', () => {
  // Each test app has a database of its own: the accounts exist on `first` only, and `second` sees
  // the same usernames as unknown accounts, which fail (and count) alike.
  it('share an account’s failures between instances, and keep the colleagues of its address signing in', async () => {
    const remoteAddress = newAddress()
    const org = await newOrganization(first)
    const attacked = await org.user('PROVIDER')
    const colleague = await org.user('NURSE')
    const statuses: number[] = []
    for (const app of [first, second, first, second]) {
      statuses.push((await login(app, remoteAddress, attacked.email, 'wrong-password')).statusCode)
    }
    expect(statuses).toEqual([401, 401, 401, 429])
    const limited = await login(first, newAddress(), attacked.email, TEST_PASSWORD)
    expect(limited.statusCode).toBe(429)
    expect(limited.json()).toMatchObject({ success: false, error: { code: 'RATE_001' } })
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(800)

    expect((await login(first, remoteAddress, colleague.email, TEST_PASSWORD)).statusCode).toBe(200)
  })

  it('sign in from an address that has used up the anonymous limit, and take successes back', async () => {
    const remoteAddress = newAddress()
    const user = await (await newOrganization(first)).user('PROVIDER')
    for (let i = 0; i < 3; i++) await first.inject({ url: '/api/patients', remoteAddress })
    expect((await first.inject({ url: '/fhir/R4/metadata', remoteAddress })).statusCode).toBe(429)

    const statuses: number[] = []
    for (let i = 0; i < 6; i++)
      statuses.push((await login(first, remoteAddress, user.email, TEST_PASSWORD)).statusCode)
    expect(statuses).toEqual([200, 200, 200, 200, 200, 200])
    expect(Number(await redis.get(`ehr-rate-limit:sign-in:address:${remoteAddress}`))).toBe(0)
  })

  it('stop spraying across accounts at the address’s ceiling, on every instance', async () => {
    const remoteAddress = newAddress()
    const org = await newOrganization(first)
    const statuses: number[] = []
    for (let i = 0; i < 6; i++) {
      const app = i % 2 ? second : first
      statuses.push(
        (await login(app, remoteAddress, `sprayed-${i}-${org.id}@example.test`, 'guess')).statusCode,
      )
    }
    expect(statuses).toEqual([401, 401, 401, 401, 401, 429])
  })

  it('keep accounts under a hash of the username, never the username', async () => {
    const user = await (await newOrganization(first)).user('PROVIDER')
    await login(first, newAddress(), user.email, 'wrong-password')
    const keys = await redis.keys('ehr-rate-limit:sign-in:account:*')
    expect(keys.length).toBeGreaterThan(0)
    const local = user.email.split('@')[0] as string
    expect(keys.filter((key) => key.toLowerCase().includes(local))).toEqual([])
  })
})
