import { createHash, createPublicKey, generateKeyPairSync } from 'node:crypto'
import { decodeJwt, decodeProtectedHeader, importPKCS8, jwtVerify, SignJWT, UnsecuredJWT } from 'jose'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { ERRORS } from '../../../src/errors.js'
import { openPrivateKey } from '../../../src/identity/signing-keys.js'
import { buildTestApp } from '../../helpers/app.js'
import { dereference } from '../../helpers/dereference.js'
import { bearer, newOrganization, TEST_PASSWORD, type TestUser, tokenFor } from '../../helpers/factories.js'

let app: App
let signingKey: { kid: string; private_key: string; public_key: string }

beforeAll(async () => {
  app = await buildTestApp()
  const row = await app.db
    .selectFrom('signing_keys')
    .select(['kid', 'private_key_sealed', 'public_key'])
    .where('retired_at', 'is', null)
    .orderBy('created_at', 'desc')
    .executeTakeFirstOrThrow()
  const privateKey = openPrivateKey(app.secretBox, row.kid, row.private_key_sealed as string)
  signingKey = { kid: row.kid, private_key: privateKey, public_key: row.public_key }
})
afterAll(async () => {
  await app.close()
})

const login = (username: string, password: string) =>
  app.inject({ method: 'POST', url: '/api/auth/login', payload: { username, password } })

const me = (token: string) => app.inject({ url: '/api/auth/me', headers: bearer(token) })

const DAY = 86_400

/** Sets `iat` that many seconds from now, and `exp` that long after it. */
function issuedAt(claims: Record<string, unknown>, fromNow: number, lifetime: number) {
  claims.iat = Math.floor(Date.now() / 1000) + fromNow
  claims.exp = (claims.iat as number) + lifetime
}

/** Re-signs a valid token's claims, changed, with the service's own key: only the change can fail it. */
async function resigned(user: TestUser, change: (claims: Record<string, unknown>) => void) {
  const claims: Record<string, unknown> = { ...decodeJwt(user.token) }
  change(claims)
  return new SignJWT(claims)
    .setProtectedHeader({ alg: 'RS256', typ: 'JWT', kid: signingKey.kid })
    .sign(await importPKCS8(signingKey.private_key, 'RS256'))
}

describe('POST /api/auth/login', () => {
  it('returns 200 with the envelope login response and a Keycloak-shaped RS256 token', async () => {
    const org = await newOrganization(app)
    const user = await org.user('PROVIDER', 'NURSE')
    const response = await login(user.email.toUpperCase(), TEST_PASSWORD)
    expect(response.statusCode).toBe(200)
    const body = response.json()
    expect(body).toMatchObject({
      success: true,
      message: 'Login successful',
      data: {
        expiresIn: 3600,
        user: { id: user.id, email: user.email, firstName: 'Test', role: 'PROVIDER' },
      },
    })
    const { token, refreshToken } = body.data
    // Other test files may rotate the signing key of a shared database: take the key the token names.
    const header = decodeProtectedHeader(token)
    expect(header).toMatchObject({ alg: 'RS256', typ: 'JWT' })
    const key = await app.db
      .selectFrom('signing_keys')
      .select('public_key')
      .where('kid', '=', header.kid as string)
      .executeTakeFirstOrThrow()

    const { payload } = await jwtVerify(token, createPublicKey(key.public_key), {
      issuer: 'http://localhost:8080/realms/ehr',
      audience: 'ehr-api',
    })
    expect(payload).toMatchObject({
      sub: user.subject,
      azp: 'ehr-api',
      typ: 'Bearer',
      realm_access: { roles: ['PROVIDER', 'NURSE'] },
      resource_access: { 'ehr-api': { roles: ['PROVIDER', 'NURSE'] } },
      groups: [org.groupPath],
      email: user.email,
      preferred_username: user.email,
      given_name: 'Test',
      email_verified: true,
      scope: 'openid profile email',
    })
    expect((payload.exp ?? 0) - (payload.iat ?? 0)).toBe(3600)
    expect(payload.jti).toMatch(/^[0-9a-f-]{36}$/)

    const stored = await app.db
      .selectFrom('refresh_tokens')
      .innerJoin('sessions', 'sessions.id', 'refresh_tokens.session_id')
      .select(['refresh_tokens.token_hash', 'refresh_tokens.expires_at', 'sessions.user_id'])
      .where('sessions.id', '=', payload.session_state as string)
      .executeTakeFirstOrThrow()
    expect(stored.user_id).toBe(user.id)
    expect(stored.token_hash).toBe(createHash('sha256').update(refreshToken).digest('base64url'))
    expect(stored.token_hash).not.toBe(refreshToken)
    expect(stored.expires_at.getTime() - Date.now()).toBeGreaterThan(86_300_000)
  })

  it('returns 401 AUTH_001 with the same body for a wrong password and for an unknown user', async () => {
    const user = await (await newOrganization(app)).user('PROVIDER')
    const wrongPassword = await login(user.email, 'not-the-password')
    const unknownUser = await login('nobody@example.test', 'not-the-password')
    expect(wrongPassword.statusCode).toBe(401)
    expect(unknownUser.statusCode).toBe(401)
    expect(wrongPassword.json()).toEqual({
      success: false,
      message: 'Invalid credentials',
      error: { code: 'AUTH_001', details: 'Invalid username or password' },
    })
    expect(unknownUser.json()).toEqual(wrongPassword.json())
  })

  it('returns 401 for a deactivated account', async () => {
    const user = await (await newOrganization(app)).user('PROVIDER')
    await app.db.updateTable('users').set({ active: false }).where('id', '=', user.id).execute()
    expect((await login(user.email, TEST_PASSWORD)).statusCode).toBe(401)
  })

  describe('with a temporary password', () => {
    const NEW_PASSWORD = 'a long and brand new passphrase'

    async function temporaryUser() {
      const user = await (await newOrganization(app)).user('FRONT_DESK')
      await app.db
        .updateTable('users')
        .set({ password_change_required: true })
        .where('id', '=', user.id)
        .execute()
      return user
    }

    it('returns 403 AUTH_004 with data.requiresPasswordChange and no tokens', async () => {
      const user = await temporaryUser()
      const response = await login(user.email, TEST_PASSWORD)
      expect(response.statusCode).toBe(403)
      expect(response.json()).toEqual({
        success: false,
        message: 'Password change required',
        error: {
          code: 'AUTH_004',
          details: 'The password is temporary and must be changed before signing in',
        },
        data: { requiresPasswordChange: true },
      })
      expect(response.body).not.toMatch(/token/i)
      const sessions = await app.db
        .selectFrom('sessions')
        .select('id')
        .where('user_id', '=', user.id)
        .execute()
      expect(sessions).toEqual([])
    })

    it('still returns 401 AUTH_001, with no hint of the temporary password, for a wrong password', async () => {
      const user = await temporaryUser()
      const response = await login(user.email, 'not-the-password')
      expect(response.statusCode).toBe(401)
      expect(response.json()).toEqual({
        success: false,
        message: 'Invalid credentials',
        error: { code: 'AUTH_001', details: 'Invalid username or password' },
      })
    })

    it('returns 200 with tokens once the password is changed without a token', async () => {
      const user = await temporaryUser()
      const change = await app.inject({
        method: 'POST',
        url: '/api/auth/change-password',
        payload: { username: user.email, currentPassword: TEST_PASSWORD, newPassword: NEW_PASSWORD },
      })
      expect(change.statusCode, change.body).toBe(200)
      expect((await login(user.email, TEST_PASSWORD)).statusCode).toBe(401)
      const signedIn = await login(user.email, NEW_PASSWORD)
      expect(signedIn.statusCode).toBe(200)
      expect(signedIn.json()).toMatchObject({ success: true, data: { user: { role: 'FRONT_DESK' } } })
      expect((await me(signedIn.json().data.token)).statusCode).toBe(200)
    })

    it('declares the 403 in the contract with data.requiresPasswordChange, and AUTH_004 in the error table', async () => {
      const document = dereference(app.swagger()) as {
        paths: Record<
          string,
          { post: { responses: Record<string, { content: Record<string, { schema: object }> }> } }
        >
      }
      const responses = document.paths['/api/auth/login']?.post.responses ?? {}
      expect(Object.keys(responses)).toContain('403')
      expect(JSON.stringify(responses['403'])).toContain('requiresPasswordChange')
      expect(JSON.stringify(responses['200'])).not.toContain('requiresPasswordChange')
      expect(ERRORS.AUTH_004).toMatchObject({ status: 403, statuses: [403] })
    })
  })

  it('returns 422 VAL_002 when the password is missing', async () => {
    const response = await app.inject({
      method: 'POST',
      url: '/api/auth/login',
      payload: { username: 'a@b.c' },
    })
    expect(response.statusCode).toBe(422)
    expect(response.json().error).toEqual({
      code: 'VAL_002',
      details: 'password is required',
      fields: [{ path: 'password', message: 'is required' }],
    })
  })
})

describe('GET /api/auth/me', () => {
  it('returns the current user with roles and organization', async () => {
    const org = await newOrganization(app)
    const user = await org.user('ADMIN', 'PROVIDER')
    const response = await me(user.token)
    expect(response.statusCode).toBe(200)
    expect(response.json().data).toEqual({
      id: String(user.id),
      email: user.email,
      firstName: 'Test',
      lastName: 'User',
      roles: ['ADMIN', 'PROVIDER'],
      organizationId: org.id,
    })
  })

  it('accepts the token returned by login', async () => {
    const user = await (await newOrganization(app)).user('NURSE')
    const token = (await login(user.email, TEST_PASSWORD)).json().data.token
    expect((await me(token)).json().data.email).toBe(user.email)
  })
})

describe('access token verification', () => {
  let user: TestUser

  beforeAll(async () => {
    user = await (await newOrganization(app)).user('PROVIDER')
  })

  it('returns 401 AUTH_002 for an expired token', async () => {
    const response = await me(tokenFor(app, user, -60))
    expect(response.statusCode).toBe(401)
    expect(response.json().error.code).toBe('AUTH_002')
  })

  it.each([
    ['no Authorization header', undefined],
    ['a Basic header', 'Basic dXNlcjpwYXNz'],
    ['a bearer of garbage', 'Bearer not.a.jwt'],
    ['an empty bearer', 'Bearer '],
  ])('returns 401 AUTH_001 for %s', async (_label, authorization) => {
    const response = await app.inject({
      url: '/api/auth/me',
      headers: authorization ? { authorization } : {},
    })
    expect(response.statusCode).toBe(401)
    expect(response.json()).toMatchObject({ success: false, error: { code: 'AUTH_001' } })
  })

  it('rejects an unsigned (alg none) token', async () => {
    const unsigned = new UnsecuredJWT(decodeJwt(user.token)).encode()
    expect((await me(unsigned)).statusCode).toBe(401)
  })

  it('rejects an HS256 token keyed with the public key', async () => {
    const forged = await new SignJWT(decodeJwt(user.token))
      .setProtectedHeader({ alg: 'HS256', kid: signingKey.kid })
      .sign(new TextEncoder().encode(signingKey.public_key))
    expect((await me(forged)).statusCode).toBe(401)
  })

  it('does not take a token that carries the signature of a token already accepted', async () => {
    const token = user.token
    expect((await me(token)).statusCode).toBe(200)
    const [header, , signature] = token.split('.')
    const elevated = { ...decodeJwt(token), realm_access: { roles: ['ADMIN'] } }
    const forged = `${header}.${Buffer.from(JSON.stringify(elevated)).toString('base64url')}.${signature}`
    expect(forged.slice(-32)).toBe(token.slice(-32))
    const response = await me(forged)
    expect(response.statusCode).toBe(401)
    expect(response.json().error.code).toBe('AUTH_001')
    expect((await me(token)).statusCode).toBe(200)
  })

  it('rejects a token signed by an unknown key, with or without our kid', async () => {
    const rogue = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey
    for (const kid of ['rogue', signingKey.kid]) {
      const forged = await new SignJWT(decodeJwt(user.token))
        .setProtectedHeader({ alg: 'RS256', kid })
        .sign(rogue)
      const response = await me(forged)
      expect(response.statusCode, kid).toBe(401)
      expect(response.json().error.code).toBe('AUTH_001')
    }
  })

  it('accepts a correctly re-signed token (the control for the cases below)', async () => {
    expect((await me(await resigned(user, () => {}))).statusCode).toBe(200)
  })

  it.each([
    [
      'another issuer',
      (c: Record<string, unknown>) => Object.assign(c, { iss: 'https://evil.example/realms/ehr' }),
    ],
    [
      'another audience',
      (c: Record<string, unknown>) => Object.assign(c, { aud: 'other-app', azp: 'other-app' }),
    ],
    ['a refresh token type', (c: Record<string, unknown>) => Object.assign(c, { typ: 'Refresh' })],
    ['an unknown subject', (c: Record<string, unknown>) => Object.assign(c, { sub: 'no-such-subject' })],
    ['no exp claim', (c: Record<string, unknown>) => delete c.exp],
    ['an iat a day in the future', (c: Record<string, unknown>) => issuedAt(c, DAY, 3600)],
    ['an iat two minutes in the future', (c: Record<string, unknown>) => issuedAt(c, 120, 3600)],
    ['an exp ten years away', (c: Record<string, unknown>) => issuedAt(c, 0, 10 * 365 * DAY)],
    ['a lifetime a second longer than an hour', (c: Record<string, unknown>) => issuedAt(c, -60, 3601)],
    [
      'no session id',
      (c: Record<string, unknown>) => {
        delete c.sid
        delete c.session_state
      },
    ],
  ])('returns 401 for %s', async (_label, change) => {
    const response = await me(await resigned(user, change))
    expect(response.statusCode).toBe(401)
    expect(response.json()).toMatchObject({ success: false, error: { code: 'AUTH_001' } })
  })

  it('accepts an iat within the allowed minute of clock skew and a lifetime of exactly an hour', async () => {
    const response = await me(await resigned(user, (c) => issuedAt(c, 50, 3600)))
    expect(response.statusCode).toBe(200)
  })

  it('names the refused claim', async () => {
    const future = await me(await resigned(user, (c) => issuedAt(c, DAY, 3600)))
    expect(future.json().error.details).toMatch(/issued in the future/)
    const long = await me(await resigned(user, (c) => issuedAt(c, 0, 7200)))
    expect(long.json().error.details).toMatch(/lifetime/)
    const sessionless = await me(await resigned(user, (c) => delete c.sid))
    expect(sessionless.json().error.details).toMatch(/session/)
  })

  it("returns 403 AUTH_003 when the token's groups do not include the user's organization", async () => {
    const response = await me(
      await resigned(user, (c) => Object.assign(c, { groups: ['/some/other/practice'] })),
    )
    expect(response.statusCode).toBe(403)
    expect(response.json().error.code).toBe('AUTH_003')
  })

  it('takes roles from realm_access.roles of the token', async () => {
    const downgraded = await resigned(user, (c) => Object.assign(c, { realm_access: { roles: ['BILLING'] } }))
    expect((await app.inject({ url: '/api/patients', headers: bearer(downgraded) })).statusCode).toBe(403)
    expect((await app.inject({ url: '/api/patients', headers: bearer(user.token) })).statusCode).toBe(200)
  })

  it('grants no role the account does not hold, whatever the token says', async () => {
    const elevated = await resigned(user, (c) =>
      Object.assign(c, { realm_access: { roles: ['PROVIDER', 'ADMIN'] } }),
    )
    const response = await app.inject({ url: '/api/users', headers: bearer(elevated) })
    expect(response.statusCode).toBe(403)
    expect(response.json().error.code).toBe('AUTH_003')
    expect((await me(elevated)).json().data.roles).toEqual(['PROVIDER'])
  })

  it('returns 401 for a deactivated account', async () => {
    const inactive = await (await newOrganization(app)).user('PROVIDER')
    await app.db.updateTable('users').set({ active: false }).where('id', '=', inactive.id).execute()
    expect((await me(inactive.token)).statusCode).toBe(401)
  })
})

describe('the embedded token issuer', () => {
  it('signs once the app is ready, having read its signing key then, and says so if asked before', async () => {
    const user = {
      subject: 'issuer-test',
      email: 'issuer-test@example.com',
      firstName: 'Issuer',
      lastName: 'Test',
      roles: ['PROVIDER' as const],
      groupPath: '/issuer-test',
    }
    let early: unknown
    const app = await buildTestApp({}, (built) => {
      try {
        built.tokenIssuer?.issueAccessToken(user, 'session')
      } catch (error) {
        early = error
      }
    })
    try {
      expect((early as Error).message).toContain('await app.ready() first')
      const token = app.tokenIssuer?.issueAccessToken(user, 'session') as string
      expect(decodeJwt(token).sub).toBe('issuer-test')
    } finally {
      await app.close()
    }
  })
})
