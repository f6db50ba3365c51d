import { randomInt } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { buildTestApp } from '../../helpers/app.js'
import { newOrganization, TEST_PASSWORD } from '../../helpers/factories.js'

let app: App

beforeAll(async () => {
  app = await buildTestApp({
    RATE_LIMIT_ANONYMOUS: '3',
    RATE_LIMIT_SIGN_IN_ACCOUNT: '3',
    RATE_LIMIT_SIGN_IN_ADDRESS: '6',
  })
})
afterAll(async () => {
  await app.close()
})

/** A client address of its own per test, so the counters of tests never meet. */
const newAddress = () => `10.${randomInt(256)}.${randomInt(256)}.${randomInt(1, 255)}`

const login = (remoteAddress: string, username: string, password: string) =>
  app.inject({ method: 'POST', url: '/api/auth/login', payload: { username, password }, remoteAddress })

const passwordGrant = (remoteAddress: string, username: string, password: string) =>
  app.inject({
    method: 'POST',
    url: '/realms/ehr/protocol/openid-connect/token',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({
      grant_type: 'password',
      client_id: 'ehr-api',
      username,
      password,
    }).toString(),
    remoteAddress,
  })

const statusesOf = async (requests: (() => Promise<{ statusCode: number }>)[]) => {
  const statuses: number[] = []
  for (const request of requests) statuses.push((await request()).statusCode)
  return statuses
}

const times = <T>(count: number, make: (index: number) => T) =>
  Array.from({ length: count }, (_, i) => make(i))

describe('POST /api/auth/login', () => {
  it('returns 200 from an address that has used up the anonymous limit', async () => {
    const remoteAddress = newAddress()
    const user = await (await newOrganization(app)).user('PROVIDER')
    expect(
      await statusesOf(times(4, () => () => app.inject({ url: '/api/patients', remoteAddress }))),
    ).toEqual([401, 401, 401, 429])

    const response = await login(remoteAddress, user.email, TEST_PASSWORD)
    expect(response.statusCode).toBe(200)
    expect(response.json()).toMatchObject({ success: true, data: { user: { email: user.email } } })
  })

  it('does not count successful sign-ins', async () => {
    const remoteAddress = newAddress()
    const user = await (await newOrganization(app)).user('PROVIDER')
    const statuses = await statusesOf(times(8, () => () => login(remoteAddress, user.email, TEST_PASSWORD)))
    expect(statuses).toEqual(times(8, () => 200))
  })

  it('returns 429 RATE_001 with Retry-After once an account has failed RATE_LIMIT_SIGN_IN_ACCOUNT times, even with its password', async () => {
    const remoteAddress = newAddress()
    const user = await (await newOrganization(app)).user('PROVIDER')
    expect(
      await statusesOf(times(3, () => () => login(remoteAddress, user.email, 'wrong-password'))),
    ).toEqual([401, 401, 401])

    // From another address, and in another case: the account is what is counted.
    const limited = await login(newAddress(), user.email.toUpperCase(), TEST_PASSWORD)
    expect(limited.statusCode).toBe(429)
    expect(limited.json()).toMatchObject({ success: false, error: { code: 'RATE_001' } })
    expect(limited.json().error.details).not.toContain(user.email)
    const retryAfter = Number(limited.headers['retry-after'])
    expect(retryAfter).toBeGreaterThan(800)
    expect(retryAfter).toBeLessThanOrEqual(900)
    expect(limited.headers['x-ratelimit-limit']).toBe('3')
    expect(limited.headers['x-ratelimit-remaining']).toBe('0')
  })

  it('keeps a colleague signing in from the address of an account that is throttled', async () => {
    const remoteAddress = newAddress()
    const org = await newOrganization(app)
    const attacked = await org.user('PROVIDER')
    const colleague = await org.user('NURSE')
    const statuses = await statusesOf(
      times(10, () => () => login(remoteAddress, attacked.email, 'wrong-password')),
    )
    expect(statuses).toEqual([401, 401, 401, 429, 429, 429, 429, 429, 429, 429])

    const response = await login(remoteAddress, colleague.email, TEST_PASSWORD)
    expect(response.statusCode).toBe(200)
  })

  it('returns 429 for every account once an address has failed RATE_LIMIT_SIGN_IN_ADDRESS times across accounts', async () => {
    const remoteAddress = newAddress()
    const org = await newOrganization(app)
    const statuses = await statusesOf(
      times(7, (i) => () => login(remoteAddress, `sprayed-${i}-${org.id}@example.test`, 'Winter2026!')),
    )
    expect(statuses).toEqual([401, 401, 401, 401, 401, 401, 429])

    const user = await org.user('PROVIDER')
    const limited = await login(remoteAddress, user.email, TEST_PASSWORD)
    expect(limited.statusCode).toBe(429)
    expect(limited.json()).toMatchObject({ success: false, error: { code: 'RATE_001' } })
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0)
    expect((await login(newAddress(), user.email, TEST_PASSWORD)).statusCode).toBe(200)
  })

  it('does not count requests refused for the address against the account', async () => {
    const remoteAddress = newAddress()
    const org = await newOrganization(app)
    const user = await org.user('PROVIDER')
    await statusesOf(
      times(6, (i) => () => login(remoteAddress, `other-${i}-${org.id}@example.test`, 'guess')),
    )
    expect(await statusesOf(times(4, () => () => login(remoteAddress, user.email, 'guess')))).toEqual([
      429, 429, 429, 429,
    ])
    expect((await login(newAddress(), user.email, TEST_PASSWORD)).statusCode).toBe(200)
  })
})

describe('POST /api/auth/change-password', () => {
  it('counts a wrong current password as a failed sign-in of the account', async () => {
    const remoteAddress = newAddress()
    const user = await (await newOrganization(app)).user('PROVIDER')
    const change = () =>
      app.inject({
        method: 'POST',
        url: '/api/auth/change-password',
        payload: {
          username: user.email,
          currentPassword: 'wrong-password',
          newPassword: 'a-new-passphrase-42',
        },
        remoteAddress,
      })
    expect(await statusesOf(times(4, () => change))).toEqual([401, 401, 401, 429])
    expect((await login(newAddress(), user.email, TEST_PASSWORD)).statusCode).toBe(429)
  })
})

describe('POST /realms/ehr/protocol/openid-connect/token (password grant)', () => {
  it('grants tokens from an address that has used up the anonymous limit, and throttles a failing account', async () => {
    const remoteAddress = newAddress()
    const org = await newOrganization(app)
    const user = await org.user('PROVIDER')
    await statusesOf(times(3, () => () => app.inject({ url: '/api/patients', remoteAddress })))

    expect((await passwordGrant(remoteAddress, user.email, TEST_PASSWORD)).statusCode).toBe(200)
    const attacked = await org.user('NURSE')
    const statuses = await statusesOf(
      times(4, () => () => passwordGrant(remoteAddress, attacked.email, 'wrong')),
    )
    expect(statuses).toEqual([401, 401, 401, 429])
    const limited = await passwordGrant(remoteAddress, attacked.email, TEST_PASSWORD)
    expect(limited.statusCode).toBe(429)
    expect(limited.json()).toMatchObject({ error: 'slow_down' })
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0)
  })

  it('still counts other grants against the anonymous limit', async () => {
    const remoteAddress = newAddress()
    const grant = () =>
      app.inject({
        method: 'POST',
        url: '/realms/ehr/protocol/openid-connect/token',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: 'grant_type=client_credentials&client_id=nobody&client_secret=guess',
        remoteAddress,
      })
    expect(await statusesOf(times(4, () => grant))).toEqual([401, 401, 401, 429])
  })
})

describe('GET /fhir/R4/metadata', () => {
  it('keeps its anonymous count whatever sign-ins the address makes, and sign-ins work once it is spent', async () => {
    const remoteAddress = newAddress()
    const user = await (await newOrganization(app)).user('PROVIDER')
    const metadata = () => app.inject({ url: '/fhir/R4/metadata', remoteAddress })
    expect((await metadata()).headers['x-ratelimit-remaining']).toBe('2')
    await login(remoteAddress, user.email, TEST_PASSWORD)
    await login(remoteAddress, user.email, 'wrong-password')
    await passwordGrant(remoteAddress, user.email, TEST_PASSWORD)
    expect((await metadata()).headers['x-ratelimit-remaining']).toBe('1')
    await metadata()
    expect((await metadata()).statusCode).toBe(429)
    expect((await login(remoteAddress, user.email, TEST_PASSWORD)).statusCode).toBe(200)
  })
})
