import { createHash, randomBytes } from 'node:crypto'
import { createRemoteJWKSet, decodeJwt, decodeProtectedHeader, type JWTPayload, jwtVerify } from 'jose'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type OidcProviderHarness, startOidcProvider } from '../../helpers/servers/oidc-provider.js'

const realm = 'ehr'
const clientId = 'ehr-api'
const clientSecret = 'ehr-api-secret'
const redirectUri = 'http://127.0.0.1:3999/callback'
const alice = {
  subject: '7d1c7a52-0f3e-4e43-9d0a-3f0c2b1e9a11',
  username: 'alice',
  password: 'alice-password',
  email: 'alice@clinic.test',
  givenName: 'Alice',
  familyName: 'Smith',
  roles: ['PROVIDER', 'USER'],
  groups: ['org-north'],
}
const bob = {
  subject: 'b0b5b0b5-0000-4000-8000-000000000002',
  username: 'bob',
  password: 'bob-password',
  email: 'bob@clinic.test',
  givenName: 'Bob',
  familyName: 'Jones',
  roles: ['NURSE'],
  groups: ['org-south'],
}
const basicAuth = `Basic ${Buffer.from(`${clientId}:${clientSecret}`).toString('base64')}`

interface TokenSet {
  access_token: string
  expires_in: number
  refresh_expires_in: number
  refresh_token: string
  token_type: string
  'not-before-policy': number
  session_state: string
  scope: string
  id_token?: string
}

async function postForm(url: string, fields: Record<string, string>, authorization?: string) {
  const response = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      ...(authorization ? { authorization } : {}),
    },
    body: new URLSearchParams(fields),
  })
  const text = await response.text()
  return { status: response.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} }
}

function pkcePair() {
  const verifier = randomBytes(32).toString('base64url')
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') }
}

describe('OpenID provider harness (Keycloak look-alike)', () => {
  let provider: OidcProviderHarness
  let tokenEndpoint: string
  let jwksUri: string

  const passwordLogin = async (user = alice, scope = 'openid') => {
    const { status, body } = await postForm(tokenEndpoint, {
      grant_type: 'password',
      client_id: clientId,
      client_secret: clientSecret,
      username: user.username,
      password: user.password,
      scope,
    })
    expect(status).toBe(200)
    return body as unknown as TokenSet
  }

  const verify = (token: string) =>
    jwtVerify(token, createRemoteJWKSet(new URL(jwksUri)), { issuer: provider.issuer, audience: clientId })

  const expectKeycloakClaims = (payload: JWTPayload, user: typeof alice) => {
    expect(payload).toMatchObject({
      iss: provider.issuer,
      sub: user.subject,
      azp: clientId,
      typ: 'Bearer',
      realm_access: { roles: user.roles },
      resource_access: { [clientId]: { roles: user.roles } },
      groups: user.groups,
      email: user.email,
      email_verified: true,
      name: `${user.givenName} ${user.familyName}`,
      preferred_username: user.username,
      given_name: user.givenName,
      family_name: user.familyName,
    })
    expect([payload.aud].flat()).toContain(clientId)
    expect(payload.jti).toEqual(expect.any(String))
    expect(payload.session_state).toEqual(expect.any(String))
    expect(payload.exp).toBeGreaterThan(Math.floor(Date.now() / 1000))
  }

  beforeAll(async () => {
    provider = await startOidcProvider({ realm, clientId, clientSecret, redirectUri, users: [alice, bob] })
    tokenEndpoint = `${provider.issuer}/protocol/openid-connect/token`
    jwksUri = `${provider.issuer}/protocol/openid-connect/certs`
  })

  afterAll(async () => {
    await provider?.close()
  })

  it('serves a Keycloak-shaped discovery document on loopback', async () => {
    expect(provider.issuer).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/realms\/ehr$/)
    const response = await fetch(`${provider.issuer}/.well-known/openid-configuration`)
    expect(response.status).toBe(200)
    const discovery = (await response.json()) as Record<string, unknown>
    const endpoint = (path: string) => `${provider.issuer}/protocol/openid-connect/${path}`
    expect(discovery).toMatchObject({
      issuer: provider.issuer,
      authorization_endpoint: endpoint('auth'),
      token_endpoint: endpoint('token'),
      jwks_uri: endpoint('certs'),
      revocation_endpoint: endpoint('revoke'),
      end_session_endpoint: endpoint('logout'),
      userinfo_endpoint: endpoint('userinfo'),
    })
    expect(discovery.grant_types_supported).toEqual(
      expect.arrayContaining(['authorization_code', 'refresh_token', 'password']),
    )
  })

  it('returns a Keycloak token set for the password grant', async () => {
    const tokens = await passwordLogin()
    expect(tokens).toMatchObject({
      expires_in: 300,
      token_type: 'Bearer',
      'not-before-policy': 0,
      scope: 'openid profile email',
    })
    expect(tokens.access_token).toEqual(expect.any(String))
    expect(tokens.refresh_token).toEqual(expect.any(String))
    expect(tokens.session_state).toEqual(expect.any(String))
    expect(tokens.refresh_expires_in).toBeGreaterThan(tokens.expires_in)
  })

  it('issues RS256 JWT access tokens with Keycloak claims, verifiable through the JWKS', async () => {
    const tokens = await passwordLogin(bob, 'profile')
    const { payload, protectedHeader } = await verify(tokens.access_token)
    expect(protectedHeader).toMatchObject({ alg: 'RS256', typ: 'JWT', kid: expect.any(String) })
    expectKeycloakClaims(payload, bob)
    expect(payload.session_state).toBe(tokens.session_state)
    expect(payload.scope).toBe('profile email')
    expect(payload.exp).toBe((payload.iat ?? 0) + 300)
  })

  it('rejects bad credentials with invalid_grant as Keycloak does', async () => {
    for (const [username, password] of [
      ['alice', 'wrong-password'],
      ['nobody', 'alice-password'],
    ]) {
      const { status, body } = await postForm(
        tokenEndpoint,
        { grant_type: 'password', username: username ?? '', password: password ?? '' },
        basicAuth,
      )
      expect(status).toBe(401)
      expect(body).toEqual({ error: 'invalid_grant', error_description: 'Invalid user credentials' })
    }
  })

  it('refreshes with the refresh_token grant and a new access token', async () => {
    const tokens = await passwordLogin()
    const { status, body } = await postForm(
      tokenEndpoint,
      { grant_type: 'refresh_token', refresh_token: tokens.refresh_token },
      basicAuth,
    )
    expect(status).toBe(200)
    const refreshed = body as unknown as TokenSet
    expect(refreshed.access_token).not.toBe(tokens.access_token)
    expect(refreshed.refresh_token).toEqual(expect.any(String))
    expect(refreshed).toMatchObject({ token_type: 'Bearer', session_state: tokens.session_state })
    const { payload } = await verify(refreshed.access_token)
    expectKeycloakClaims(payload, alice)
    expect(payload.jti).not.toBe(decodeJwt(tokens.access_token).jti)
  })

  it('rejects a refresh token after it is revoked', async () => {
    const tokens = await passwordLogin()
    const revoked = await postForm(`${provider.issuer}/protocol/openid-connect/revoke`, {
      token: tokens.refresh_token,
      token_type_hint: 'refresh_token',
      client_id: clientId,
      client_secret: clientSecret,
    })
    expect(revoked.status).toBe(200)
    const { status, body } = await postForm(
      tokenEndpoint,
      { grant_type: 'refresh_token', refresh_token: tokens.refresh_token },
      basicAuth,
    )
    expect(status).toBe(400)
    expect(body.error).toBe('invalid_grant')
  })

  it('ends the session on a Keycloak back-channel logout with the refresh token', async () => {
    const tokens = await passwordLogin()
    const logoutEndpoint = `${provider.issuer}/protocol/openid-connect/logout`
    const denied = await postForm(logoutEndpoint, {
      client_id: clientId,
      refresh_token: tokens.refresh_token,
    })
    expect(denied.status).toBe(401)
    const loggedOut = await postForm(logoutEndpoint, { refresh_token: tokens.refresh_token }, basicAuth)
    expect(loggedOut.status).toBe(204)
    const refresh = await postForm(
      tokenEndpoint,
      { grant_type: 'refresh_token', refresh_token: tokens.refresh_token },
      basicAuth,
    )
    expect(refresh.status).toBe(400)
    expect(refresh.body.error).toBe('invalid_grant')
    const again = await postForm(logoutEndpoint, { refresh_token: tokens.refresh_token }, basicAuth)
    expect(again).toEqual({
      status: 400,
      body: { error: 'invalid_grant', error_description: 'Invalid refresh token' },
    })
  })

  it('rotates the signing key while still publishing the old one', async () => {
    const before = await passwordLogin()
    await provider.rotateKeys()
    const after = await passwordLogin()
    const oldKid = decodeProtectedHeader(before.access_token).kid
    const newKid = decodeProtectedHeader(after.access_token).kid
    expect(newKid).toEqual(expect.any(String))
    expect(newKid).not.toBe(oldKid)
    const jwks = (await (await fetch(jwksUri)).json()) as { keys: Array<{ kid: string }> }
    expect(jwks.keys.map((key) => key.kid)).toEqual(expect.arrayContaining([oldKid, newKid]))
    expectKeycloakClaims((await verify(before.access_token)).payload, alice)
    expectKeycloakClaims((await verify(after.access_token)).payload, alice)
    const refresh = await postForm(
      tokenEndpoint,
      { grant_type: 'refresh_token', refresh_token: before.refresh_token },
      basicAuth,
    )
    expect(refresh.status).toBe(200)
    expect(decodeProtectedHeader(String(refresh.body.access_token)).kid).toBe(newKid)
  })

  it('completes the authorization-code flow with PKCE', async () => {
    const pkce = pkcePair()
    const code = await provider.authorizationCode('alice', alice.password, pkce.challenge)
    const exchange = (verifier: string, authorizationCode: string) =>
      postForm(
        tokenEndpoint,
        {
          grant_type: 'authorization_code',
          code: authorizationCode,
          redirect_uri: redirectUri,
          code_verifier: verifier,
        },
        basicAuth,
      )
    const { status, body } = await exchange(pkce.verifier, code)
    expect(status).toBe(200)
    const tokens = body as unknown as TokenSet
    expect(tokens).toMatchObject({ token_type: 'Bearer', expires_in: 300, 'not-before-policy': 0 })
    expect(tokens.refresh_token).toEqual(expect.any(String))
    expect(tokens.id_token).toEqual(expect.any(String))
    const { payload } = await verify(tokens.access_token)
    expectKeycloakClaims(payload, alice)
    expect(payload.session_state).toBe(tokens.session_state)

    const reused = await exchange(pkce.verifier, code)
    expect(reused.status).toBe(400)
    expect(reused.body.error).toBe('invalid_grant')
    const otherCode = await provider.authorizationCode('alice', alice.password, pkce.challenge)
    const wrongVerifier = await exchange(pkcePair().verifier, otherCode)
    expect(wrongVerifier.status).toBe(400)
    expect(wrongVerifier.body.error).toBe('invalid_grant')
  })

  it('fails the authorization-code flow on a wrong password', async () => {
    await expect(provider.authorizationCode('alice', 'wrong-password')).rejects.toThrow(
      /Invalid username or password/,
    )
  })

  it('issues access tokens that expire after accessTokenLifetimeSeconds', async () => {
    const shortLived = await startOidcProvider({
      realm,
      clientId,
      clientSecret,
      redirectUri,
      users: [alice],
      accessTokenLifetimeSeconds: 1,
    })
    try {
      const { body } = await postForm(
        `${shortLived.issuer}/protocol/openid-connect/token`,
        { grant_type: 'password', username: alice.username, password: alice.password },
        basicAuth,
      )
      const token = String(body.access_token)
      expect(body.expires_in).toBe(1)
      const keys = createRemoteJWKSet(new URL(`${shortLived.issuer}/protocol/openid-connect/certs`))
      const { iat = 0, exp } = decodeJwt(token)
      expect(exp).toBe(iat + 1)
      const atIssue = await jwtVerify(token, keys, { currentDate: new Date(iat * 1000) })
      expect(atIssue.payload.sub).toBe(alice.subject)
      await new Promise((resolve) => setTimeout(resolve, 2100))
      await expect(jwtVerify(token, keys)).rejects.toMatchObject({ code: 'ERR_JWT_EXPIRED' })
    } finally {
      await shortLived.close()
    }
  })
})
