import { decodeJwt } from 'jose'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { rotateSigningKey } from '../../../src/identity/signing-keys.js'
import { buildTestApp } from '../../helpers/app.js'
import { bearer, newOrganization, TEST_PASSWORD, type TestUser } from '../../helpers/factories.js'

let app: App

beforeAll(async () => {
  app = await buildTestApp()
})
afterAll(async () => {
  await app.close()
})

async function signIn(user: TestUser) {
  const response = await app.inject({
    method: 'POST',
    url: '/api/auth/login',
    payload: { username: user.email, password: TEST_PASSWORD },
  })
  expect(response.statusCode).toBe(200)
  return response.json().data as { token: string; refreshToken: string }
}

const refresh = (payload: object) => app.inject({ method: 'POST', url: '/api/auth/refresh', payload })
const logout = (payload: object) => app.inject({ method: 'POST', url: '/api/auth/logout', payload })

describe('POST /api/auth/refresh', () => {
  it('returns new tokens in the envelope and retires the refresh token sent', async () => {
    const user = await (await newOrganization(app)).user('NURSE')
    const first = await signIn(user)
    const response = await refresh({ refreshToken: first.refreshToken })
    expect(response.statusCode).toBe(200)
    const data = response.json().data
    expect(response.json()).toMatchObject({ success: true, data: { expiresIn: 3600 } })
    expect(data.refreshToken).not.toBe(first.refreshToken)
    expect(decodeJwt(data.token).session_state).toBe(decodeJwt(first.token).session_state)
    expect((await app.inject({ url: '/api/auth/me', headers: bearer(data.token) })).statusCode).toBe(200)

    const next = await refresh({ refresh_token: data.refreshToken })
    expect(next.statusCode).toBe(200)
  })

  it('detects reuse: a rotated token revokes the whole session', async () => {
    const user = await (await newOrganization(app)).user('PROVIDER')
    const first = await signIn(user)
    const second = (await refresh({ refresh_token: first.refreshToken })).json().data

    const replay = await refresh({ refresh_token: first.refreshToken })
    expect(replay.statusCode).toBe(400)
    expect(replay.json()).toMatchObject({ success: false, error: { code: 'AUTH_001' } })

    const legitimate = await refresh({ refresh_token: second.refreshToken })
    expect(legitimate.statusCode).toBe(400)
    const session = await app.db
      .selectFrom('sessions')
      .select(['revoked_at', 'revoked_reason'])
      .where('id', '=', decodeJwt(first.token).session_state as string)
      .executeTakeFirstOrThrow()
    expect(session.revoked_reason).toBe('REFRESH_REUSE')
  })

  it('returns 400 for an unknown token and 400 VAL_002 without one', async () => {
    expect((await refresh({ refresh_token: 'not-a-token' })).statusCode).toBe(400)
    const missing = await refresh({})
    expect(missing.statusCode).toBe(422)
    expect(missing.json().error).toEqual({
      code: 'VAL_002',
      details: 'refresh_token is required',
      fields: [{ path: 'refresh_token', message: 'is required' }],
    })
  })

  it('refuses the refresh token of a deactivated account', async () => {
    const user = await (await newOrganization(app)).user('PROVIDER')
    const first = await signIn(user)
    await app.db.updateTable('users').set({ active: false }).where('id', '=', user.id).execute()
    expect((await refresh({ refresh_token: first.refreshToken })).statusCode).toBe(400)
  })
})

describe('POST /api/auth/logout', () => {
  it('returns 204 and the session can no longer refresh', async () => {
    const user = await (await newOrganization(app)).user('PROVIDER')
    const session = await signIn(user)
    const response = await logout({ refresh_token: session.refreshToken })
    expect(response.statusCode).toBe(204)
    expect(response.body).toBe('')
    const after = await refresh({ refresh_token: session.refreshToken })
    expect(after.statusCode).toBe(400)
    expect(after.json().error.code).toBe('AUTH_001')
    expect((await logout({ refresh_token: session.refreshToken })).statusCode).toBe(204)
  })
})

describe('signing key rotation', () => {
  it('keeps tokens of the retired key valid and signs new ones with the new key', async () => {
    const user = await (await newOrganization(app)).user('PROVIDER')
    const before = await signIn(user)
    const oldKid = (
      JSON.parse(Buffer.from(before.token.split('.')[0] as string, 'base64url').toString()) as { kid: string }
    ).kid
    const newKid = await rotateSigningKey(app.db, app.secretBox)
    expect(newKid).not.toBe(oldKid)
    expect((await app.inject({ url: '/api/auth/me', headers: bearer(before.token) })).statusCode).toBe(200)
  })
})
