import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import { type App, buildApp } from '../../../src/app.js'
import { loadConfig } from '../../../src/config.js'
import { buildTestApp, testEnvironment } from '../../helpers/app.js'
import { bearer, newOrganization, TEST_PASSWORD, type TestUser } from '../../helpers/factories.js'

// The service promises that a revoked session's access tokens stop working within 5 s, on every
// instance, with no database read per request.
const PROMISED_MS = 5000

let first: App
let second: App

beforeAll(async () => {
  first = await buildTestApp()
  // A second instance on the same database (the first one owns and closes it).
  second = await buildApp(loadConfig(testEnvironment()), {
    database: { ...first.database, close: async () => {} },
  })
  await second.ready()
})
afterAll(async () => {
  await second.close()
  await first.close()
})

async function signIn(user: TestUser) {
  const response = await first.inject({
    method: 'POST',
    url: '/api/auth/login',
    payload: { username: user.email, password: TEST_PASSWORD },
  })
  expect(response.statusCode).toBe(200)
  return response.json().data as { token: string; refreshToken: string }
}

const me = (app: App, token: string) => app.inject({ url: '/api/auth/me', headers: bearer(token) })

/** Waits until both instances refuse the token, and says how long that took. */
async function refusedEverywhere(token: string): Promise<number> {
  const started = Date.now()
  for (const app of [first, second]) {
    await expect
      .poll(async () => (await me(app, token)).statusCode, { timeout: PROMISED_MS, interval: 100 })
      .toBe(401)
  }
  const refused = await me(second, token)
  expect(refused.json()).toMatchObject({ success: false, error: { code: 'AUTH_001' } })
  return Date.now() - started
}

describe('access tokens of an ended session', () => {
  it('stop working on every instance within 5 s of a logout, while other sessions go on', async () => {
    const user = await (await newOrganization(first)).user('NURSE')
    const ending = await signIn(user)
    const other = await signIn(user)
    // Known to both instances (their token caches hold it) before the session ends.
    expect((await me(first, ending.token)).statusCode).toBe(200)
    expect((await me(second, ending.token)).statusCode).toBe(200)

    const logout = await first.inject({
      method: 'POST',
      url: '/api/auth/logout',
      payload: { refreshToken: ending.refreshToken },
    })
    expect(logout.statusCode).toBe(204)
    expect(await refusedEverywhere(ending.token)).toBeLessThan(PROMISED_MS)
    expect((await me(second, ending.token)).json().error.details).toMatch(/session of this token has ended/)
    expect((await me(second, other.token)).statusCode).toBe(200)
  })

  it('stop working after a password change, a refresh-token reuse and a deactivation', async () => {
    const org = await newOrganization(first)
    const admin = await org.user('ADMIN')

    const changer = await org.user('NURSE')
    const changed = await signIn(changer)
    const change = await first.inject({
      method: 'POST',
      url: '/api/auth/change-password',
      headers: bearer(changed.token),
      payload: { currentPassword: TEST_PASSWORD, newPassword: 'a-new-password-of-length' },
    })
    expect(change.statusCode, change.body).toBe(200)
    await refusedEverywhere(changed.token)

    const copied = await signIn(await org.user('NURSE'))
    const refresh = (refreshToken: string) =>
      first.inject({ method: 'POST', url: '/api/auth/refresh', payload: { refreshToken } })
    const rotated = await refresh(copied.refreshToken)
    expect(rotated.statusCode).toBe(200)
    // Presented again: reuse, which ends the whole session.
    expect((await refresh(copied.refreshToken)).statusCode).toBe(400)
    await refusedEverywhere(rotated.json().data.token)

    const leaver = await org.user('FRONT_DESK')
    const left = await signIn(leaver)
    const deactivated = await first.inject({
      method: 'POST',
      url: `/api/users/${leaver.id}/deactivate`,
      headers: bearer(admin.token),
    })
    expect(deactivated.statusCode, deactivated.body).toBe(200)
    await refusedEverywhere(left.token)
  })
})

// An instance reads an account again at most 30 s after it last did (src/identity/principal.ts).
const ACCOUNT_CACHE_MS = 30_000

describe('access tokens of an account whose roles or organization changed', () => {
  let offsetMs = 0
  const realNow = Date.now
  /** Moves the clock of both instances forward, as if that much time had passed. */
  const later = (ms: number) => {
    offsetMs += ms
  }
  beforeAll(() => {
    vi.spyOn(Date, 'now').mockImplementation(() => realNow() + offsetMs)
  })
  afterEach(() => {
    offsetMs = 0
  })
  afterAll(() => {
    vi.restoreAllMocks()
  })

  const listUsers = (app: App, token: string) => app.inject({ url: '/api/users', headers: bearer(token) })
  const demote = (admin: TestUser, user: TestUser) =>
    first.inject({
      method: 'PUT',
      url: `/api/users/${user.id}`,
      headers: bearer(admin.token),
      payload: { firstName: 'Test', lastName: 'User', roles: ['NURSE'] },
    })

  it('stop granting a removed role on every instance within 30 s of the change', async () => {
    const org = await newOrganization(first)
    const admin = await org.user('ADMIN')
    const demoted = await org.user('ADMIN', 'NURSE')
    const { token } = await signIn(demoted)
    expect((await listUsers(first, token)).statusCode).toBe(200)
    expect((await listUsers(second, token)).statusCode).toBe(200)

    const changed = await demote(admin, demoted)
    expect(changed.statusCode, changed.body).toBe(200)
    later(ACCOUNT_CACHE_MS + 1000)
    for (const app of [first, second]) {
      const refused = await listUsers(app, token)
      expect(refused.statusCode).toBe(403)
      expect(refused.json()).toMatchObject({ success: false, error: { code: 'AUTH_003' } })
      const me = await app.inject({ url: '/api/auth/me', headers: bearer(token) })
      expect(me.statusCode).toBe(200)
      expect(me.json().data.roles).toEqual(['NURSE'])
    }
  })

  it('stop granting a removed role within 30 s even to a token first seen just before then', async () => {
    const org = await newOrganization(first)
    const admin = await org.user('ADMIN')
    const demoted = await org.user('ADMIN', 'NURSE')
    const [seen, unseen] = [await signIn(demoted), await signIn(demoted)]
    expect((await listUsers(first, seen.token)).statusCode).toBe(200)
    expect((await demote(admin, demoted)).statusCode).toBe(200)
    // First seen while the account read before the change is still cached.
    later(ACCOUNT_CACHE_MS - 1000)
    await listUsers(first, unseen.token)
    later(2000)
    const refused = await listUsers(first, unseen.token)
    expect(refused.statusCode).toBe(403)
    expect(refused.json().error.code).toBe('AUTH_003')
  })

  it('answer 403 AUTH_003 within 30 s of the account moving to another organization', async () => {
    const org = await newOrganization(first)
    const moved = await org.user('NURSE')
    const [seen, unseen] = [await signIn(moved), await signIn(moved)]
    const me = (app: App, token: string) => app.inject({ url: '/api/auth/me', headers: bearer(token) })
    expect((await me(first, seen.token)).statusCode).toBe(200)
    expect((await me(second, seen.token)).statusCode).toBe(200)

    const elsewhere = await newOrganization(first)
    await first.db
      .updateTable('users')
      .set({ organization_id: elsewhere.id })
      .where('id', '=', moved.id)
      .execute()
    later(ACCOUNT_CACHE_MS - 1000)
    await me(first, unseen.token)
    later(2000)
    for (const app of [first, second]) {
      for (const { token } of [seen, unseen]) {
        const refused = await me(app, token)
        expect(refused.statusCode).toBe(403)
        expect(refused.json()).toMatchObject({ success: false, error: { code: 'AUTH_003' } })
      }
    }
  })
})
