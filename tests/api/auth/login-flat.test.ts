import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { buildTestApp } from '../../helpers/app.js'
import { bearer, newOrganization, TEST_PASSWORD } from '../../helpers/factories.js'

let app: App

beforeAll(async () => {
  app = await buildTestApp({ LOGIN_RESPONSE_STYLE: 'flat' })
})
afterAll(async () => {
  await app.close()
})

describe('LOGIN_RESPONSE_STYLE=flat', () => {
  it('answers login and refresh with flat OAuth-style objects (variant A)', async () => {
    const user = await (await newOrganization(app)).user('PROVIDER')
    const login = await app.inject({
      method: 'POST',
      url: '/api/auth/login',
      payload: { username: user.email, password: TEST_PASSWORD },
    })
    expect(login.statusCode).toBe(200)
    const tokens = login.json()
    expect(Object.keys(tokens).sort()).toEqual(['access_token', 'expires_in', 'refresh_token', 'token_type'])
    expect(tokens).toMatchObject({ expires_in: 3600, token_type: 'Bearer' })
    expect((await app.inject({ url: '/api/auth/me', headers: bearer(tokens.access_token) })).statusCode).toBe(
      200,
    )

    const refreshed = await app.inject({
      method: 'POST',
      url: '/api/auth/refresh',
      payload: { refresh_token: tokens.refresh_token },
    })
    expect(refreshed.statusCode).toBe(200)
    expect(refreshed.json()).toMatchObject({ expires_in: 3600, token_type: 'Bearer' })
    expect(refreshed.json().refresh_token).not.toBe(tokens.refresh_token)
  })

  it('still answers errors in the envelope', async () => {
    const response = await app.inject({
      method: 'POST',
      url: '/api/auth/login',
      payload: { username: 'nobody@example.test', password: 'wrong-password' },
    })
    expect(response.statusCode).toBe(401)
    expect(response.json()).toMatchObject({ success: false, error: { code: 'AUTH_001' } })
  })
})
