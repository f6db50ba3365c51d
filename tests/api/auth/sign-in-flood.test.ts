import { randomInt } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import type { App } from '../../../src/app.js'
import { buildTestApp } from '../../helpers/app.js'
import { newOrganization, type TestUser } from '../../helpers/factories.js'

// One hashing thread and two queue places, and a wait far longer than any test: the checks let in
// stay pending until their hashes are done, so what the pool refuses does not depend on timing.
const FLOOD_SETTINGS = {
  PASSWORD_HASH_THREADS: '1',
  PASSWORD_HASH_QUEUE: '2',
  PASSWORD_HASH_WAIT_MS: '60000',
  // The flood stands for many accounts and addresses: the failure limits must not refuse it first.
  RATE_LIMIT_SIGN_IN_ACCOUNT: '1000',
  RATE_LIMIT_SIGN_IN_ADDRESS: '1000',
}

let app: App
let user: TestUser

beforeAll(async () => {
  app = await buildTestApp(FLOOD_SETTINGS)
  user = await (await newOrganization(app)).user('NURSE')
})
afterAll(async () => {
  await app.close()
})

const newAddress = () => `10.${randomInt(256)}.${randomInt(256)}.${randomInt(1, 255)}`

const wrongSignIn = (target: App = app) =>
  target.inject({
    method: 'POST',
    url: '/api/auth/login',
    payload: { username: user.email, password: 'not-the-password' },
    remoteAddress: newAddress(),
  })

/** As many wrong sign-ins as the pool lets in (a thread's and the queue's), once all are in. */
async function fillHashing(target: App = app) {
  const pending = Array.from({ length: 3 }, () => wrongSignIn(target))
  await vi.waitFor(() => expect(target.passwordHashing.load.admitted).toBe(3), {
    timeout: 10_000,
    interval: 5,
  })
  return pending
}

describe('POST /api/auth/login', () => {
  it('returns 429 RATE_001 with Retry-After when every hashing thread and queue place is taken', async () => {
    const pending = await fillHashing()

    const refused = await wrongSignIn()
    expect(refused.statusCode).toBe(429)
    expect(refused.json()).toMatchObject({ success: false, error: { code: 'RATE_001' } })
    expect(refused.headers['retry-after']).toBe('60')

    for (const response of await Promise.all(pending)) expect(response.statusCode).toBe(401)
  })

  it('answers the health check and a compressed patient list while sign-ins wait for hashing', async () => {
    const headers = { authorization: `Bearer ${user.token}` }
    for (const lastName of ['Ames', 'Baker', 'Chen']) {
      const created = await app.inject({
        method: 'POST',
        url: '/api/patients',
        headers,
        payload: {
          identification: { firstName: 'Flood', lastName, dateOfBirth: '1970-01-01', gender: 'Other' },
        },
      })
      expect(created.statusCode).toBe(201)
    }
    const pending = await fillHashing()

    const health = await app.inject({ url: '/actuator/health' })
    const list = await app.inject({
      url: '/api/patients?size=3',
      headers: { ...headers, 'accept-encoding': 'gzip' },
    })
    // Both answered while sign-ins were still waiting for the hashing thread.
    expect(app.passwordHashing.load.waiting).toBeGreaterThan(0)
    expect(health.statusCode).toBe(200)
    expect(health.json()).toMatchObject({ status: 'UP' })
    expect(list.statusCode).toBe(200)
    expect(list.headers['content-encoding']).toBe('gzip')

    for (const response of await Promise.all(pending)) expect(response.statusCode).toBe(401)
  })

  it('does not count a refusal as a failed sign-in of the account', async () => {
    const limited = await buildTestApp({ ...FLOOD_SETTINGS, RATE_LIMIT_SIGN_IN_ACCOUNT: '3' })
    try {
      const pending = await fillHashing(limited)
      const refused = await Promise.all(Array.from({ length: 5 }, () => wrongSignIn(limited)))
      expect(refused.map((response) => response.statusCode)).toEqual([429, 429, 429, 429, 429])
      // The three checked ones are the account's only failures: the next is refused by its limit.
      expect((await Promise.all(pending)).map((response) => response.statusCode)).toEqual([401, 401, 401])
      const accountLimited = await wrongSignIn(limited)
      expect(accountLimited.statusCode).toBe(429)
      expect(accountLimited.json().error.details).toContain('this account')
    } finally {
      await limited.close()
    }
  })
})

describe('POST /realms/ehr/protocol/openid-connect/token', () => {
  it('returns 429 slow_down with Retry-After to a password grant when hashing is saturated', async () => {
    const pending = await fillHashing()

    const response = await app.inject({
      method: 'POST',
      url: '/realms/ehr/protocol/openid-connect/token',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({
        grant_type: 'password',
        client_id: 'ehr-api',
        username: user.email,
        password: 'not-the-password',
      }).toString(),
      remoteAddress: newAddress(),
    })
    expect(response.statusCode).toBe(429)
    expect(response.json()).toMatchObject({ error: 'slow_down' })
    expect(response.headers['retry-after']).toBe('60')

    await Promise.all(pending)
  })
})

describe('app.close()', () => {
  it('ends the password hashing threads', async () => {
    const closing = await buildTestApp(FLOOD_SETTINGS)
    expect((await wrongSignIn(closing)).statusCode).toBe(401)
    expect(closing.passwordHashing.load.threads).toBe(1)

    await closing.close()
    expect(closing.passwordHashing.load).toMatchObject({ threads: 0, waiting: 0 })
  })
})
