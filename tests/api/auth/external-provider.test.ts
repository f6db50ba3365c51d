import { createHash, randomBytes, randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { discoverProvider } from '../../../src/identity/external-provider.js'
import { createOrganization } from '../../../src/modules/users/service.js'
import { buildTestApp } from '../../helpers/app.js'
import {
  EXTERNAL_CLIENT,
  type ExternalPractice,
  externalPerson,
  startExternalPractice,
} from '../../helpers/external-practice.js'
import { bearer } from '../../helpers/factories.js'
import { type OidcProviderHarness, startOidcProvider } from '../../helpers/servers/oidc-provider.js'

const { clientId, clientSecret, redirectUri } = EXTERNAL_CLIENT
const groupPath = `/practices/${randomUUID()}`

const alice = externalPerson(
  groupPath,
  'alice',
  ['PROVIDER', 'NURSE', 'offline_access'],
  ['/unrelated', groupPath],
)
const bob = externalPerson(groupPath, 'bob', ['PROVIDER'], ['/not-an-organization'])

let practice: ExternalPractice
let provider: OidcProviderHarness
let app: App
let organizationId: number

beforeAll(async () => {
  practice = await startExternalPractice(groupPath, [alice, bob])
  provider = practice.provider
  app = practice.app
  organizationId = practice.organizationId
})
afterAll(async () => {
  await practice.close()
})

const login = (username: string, password: string) =>
  app.inject({ method: 'POST', url: '/api/auth/login', payload: { username, password } })

describe('external provider mode (a real OpenID provider with Keycloak paths)', () => {
  it('forwards login, provisions the account from the claims on first use, and accepts the token', async () => {
    const response = await login(alice.username, alice.password)
    expect(response.statusCode).toBe(200)
    const { data } = response.json()
    expect(data).toMatchObject({
      expiresIn: 300,
      user: { email: alice.email, firstName: 'Alice', lastName: 'Tester', role: 'PROVIDER' },
    })
    const account = await app.db
      .selectFrom('users')
      .selectAll()
      .where('subject', '=', alice.subject)
      .executeTakeFirstOrThrow()
    expect(account).toMatchObject({
      organization_id: organizationId,
      email: alice.email,
      roles: ['PROVIDER', 'NURSE'],
    })
    expect(account.password_hash).toBeNull()
    expect(data.user.id).toBe(account.id)

    const me = await app.inject({ url: '/api/auth/me', headers: bearer(data.token) })
    expect(me.statusCode).toBe(200)
    expect(me.json().data).toMatchObject({ id: String(account.id), organizationId })
    expect((await app.inject({ url: '/api/patients', headers: bearer(data.token) })).statusCode).toBe(200)
  })

  it('maps wrong credentials to 401 AUTH_001', async () => {
    const response = await login(alice.username, 'wrong-password-123')
    expect(response.statusCode).toBe(401)
    expect(response.json()).toMatchObject({ success: false, error: { code: 'AUTH_001' } })
  })

  it('refuses a subject whose groups match no organization with 403 AUTH_003, creating nothing', async () => {
    const response = await login(bob.username, bob.password)
    expect(response.statusCode).toBe(403)
    expect(response.json().error.code).toBe('AUTH_003')
    const account = await app.db
      .selectFrom('users')
      .select('id')
      .where('subject', '=', bob.subject)
      .executeTakeFirst()
    expect(account).toBeUndefined()
  })

  it('forwards refresh and logout: after logout the refresh token is refused', async () => {
    const session = (await login(alice.username, alice.password)).json().data
    const refreshed = await app.inject({
      method: 'POST',
      url: '/api/auth/refresh',
      payload: { refreshToken: session.refreshToken },
    })
    expect(refreshed.statusCode).toBe(200)
    const renewed = refreshed.json().data
    expect((await app.inject({ url: '/api/auth/me', headers: bearer(renewed.token) })).statusCode).toBe(200)

    const logout = await app.inject({
      method: 'POST',
      url: '/api/auth/logout',
      payload: { refresh_token: renewed.refreshToken },
    })
    expect(logout.statusCode).toBe(204)
    const after = await app.inject({
      method: 'POST',
      url: '/api/auth/refresh',
      payload: { refresh_token: renewed.refreshToken },
    })
    expect(after.statusCode).toBe(400)
    expect(after.json().error.code).toBe('AUTH_001')
  })

  it('idp-login exchanges an authorization code with PKCE, once', async () => {
    const verifier = randomBytes(32).toString('base64url')
    const challenge = createHash('sha256').update(verifier).digest('base64url')
    const code = await provider.authorizationCode(alice.username, alice.password, challenge)
    const body = { code, redirectUri, codeVerifier: verifier }
    const response = await app.inject({ method: 'POST', url: '/api/auth/idp-login', payload: body })
    expect(response.statusCode).toBe(200)
    expect(response.json().data.user.email).toBe(alice.email)
    const token = response.json().data.token
    expect((await app.inject({ url: '/api/auth/me', headers: bearer(token) })).statusCode).toBe(200)

    const replay = await app.inject({ method: 'POST', url: '/api/auth/idp-login', payload: body })
    expect(replay.statusCode).toBe(400)
    expect(replay.json().error.code).toBe('AUTH_001')
  })

  it('idp-login also performs the password grant, and needs one of the two forms', async () => {
    const viaPassword = await app.inject({
      method: 'POST',
      url: '/api/auth/idp-login',
      payload: { username: alice.username, password: alice.password },
    })
    expect(viaPassword.statusCode).toBe(200)
    const neither = await app.inject({
      method: 'POST',
      url: '/api/auth/idp-login',
      payload: { username: alice.username },
    })
    expect(neither.statusCode).toBe(422)
    expect(neither.json().error.code).toBe('VAL_002')
  })

  it('keeps verifying after the provider rotates its signing key, without a restart', async () => {
    const before = (await login(alice.username, alice.password)).json().data.token
    await provider.rotateKeys()
    const after = (await login(alice.username, alice.password)).json().data.token
    const kid = (token: string) =>
      JSON.parse(Buffer.from(token.split('.')[0] as string, 'base64url').toString()).kid
    expect(kid(after)).not.toBe(kid(before))
    expect((await app.inject({ url: '/api/auth/me', headers: bearer(after) })).statusCode).toBe(200)
    expect((await app.inject({ url: '/api/auth/me', headers: bearer(before) })).statusCode).toBe(200)
  })
})

describe('an expiring token of the external provider', () => {
  it('is refused with 401 AUTH_002 once expired, though it was accepted (and remembered) before', async () => {
    const shortLived = await startOidcProvider({
      realm: 'short',
      clientId,
      clientSecret,
      redirectUri,
      users: [alice],
      // Long enough to be used once on a busy machine before it expires (3 s was not, on a
      // machine running other suites beside this one).
      accessTokenLifetimeSeconds: 8,
    })
    const shortApp = await buildTestApp({
      OIDC_ISSUER_URL: shortLived.issuer,
      OIDC_CLIENT_ID: clientId,
      OIDC_CLIENT_SECRET: clientSecret,
    })
    try {
      await createOrganization(shortApp.db, {
        name: 'Short practice',
        groupPath: `${groupPath}-short`,
      }).catch(() => {})
      await createOrganization(shortApp.db, { name: 'Practice', groupPath }).catch(() => {})
      const token = (
        await shortApp.inject({
          method: 'POST',
          url: '/api/auth/login',
          payload: { username: alice.username, password: alice.password },
        })
      ).json().data.token
      expect((await shortApp.inject({ url: '/api/auth/me', headers: bearer(token) })).statusCode).toBe(200)
      const { exp } = JSON.parse(Buffer.from(token.split('.')[1] as string, 'base64url').toString())
      await new Promise((resolve) => setTimeout(resolve, exp * 1000 - Date.now() + 200))
      const response = await shortApp.inject({ url: '/api/auth/me', headers: bearer(token) })
      expect(response.statusCode).toBe(401)
      expect(response.json().error.code).toBe('AUTH_002')
    } finally {
      await shortApp.close()
      await shortLived.close()
    }
  })
})

describe('discoverProvider', () => {
  it('fails with a message naming OIDC_ISSUER_URL when the provider cannot be reached', async () => {
    await expect(discoverProvider('http://127.0.0.1:1/realms/none', 1)).rejects.toThrow(
      'Could not read the OpenID configuration of OIDC_ISSUER_URL http://127.0.0.1:1/realms/none (unreachable)',
    )
  })
})

describe('GET /fhir/R4/.well-known/smart-configuration (external provider)', () => {
  it("names the provider's own endpoints, from its discovery document", async () => {
    const plain = await startOidcProvider({
      realm: 'elsewhere',
      clientId,
      clientSecret,
      redirectUri,
      users: [],
      paths: 'plain',
    })
    const other = await buildTestApp({
      OIDC_ISSUER_URL: plain.issuer,
      OIDC_CLIENT_ID: clientId,
      OIDC_CLIENT_SECRET: clientSecret,
    })
    try {
      const discovery = (await (await fetch(`${plain.issuer}/.well-known/openid-configuration`)).json()) as {
        token_endpoint: string
        authorization_endpoint: string
        revocation_endpoint: string
        introspection_endpoint: string
        userinfo_endpoint: string
        jwks_uri: string
      }
      expect(discovery.token_endpoint).toBe(`${plain.issuer}/token`)
      const response = await other.inject({ url: '/fhir/R4/.well-known/smart-configuration' })
      expect(response.statusCode).toBe(200)
      const smart = response.json()
      expect(smart).toMatchObject({
        issuer: plain.issuer,
        token_endpoint: discovery.token_endpoint,
        authorization_endpoint: discovery.authorization_endpoint,
        revocation_endpoint: discovery.revocation_endpoint,
        introspection_endpoint: discovery.introspection_endpoint,
        userinfo_endpoint: discovery.userinfo_endpoint,
        jwks_uri: discovery.jwks_uri,
        grant_types_supported: expect.arrayContaining(['authorization_code', 'refresh_token']),
        capabilities: expect.arrayContaining(['launch-standalone', 'permission-v2']),
      })
      expect(JSON.stringify(smart)).not.toContain('protocol/openid-connect')
      expect(discovery.introspection_endpoint).toBe(`${plain.issuer}/token/introspection`)
      expect(discovery.userinfo_endpoint).toBe(`${plain.issuer}/me`)
      const metadata = await other.inject({ url: '/fhir/R4/metadata' })
      const oauthUris = Object.fromEntries(
        (metadata.json().rest[0].security.extension[0].extension as { url: string; valueUri: string }[]).map(
          ({ url, valueUri }) => [url, valueUri],
        ),
      )
      expect(oauthUris).toEqual({
        token: discovery.token_endpoint,
        authorize: discovery.authorization_endpoint,
        introspect: discovery.introspection_endpoint,
        revoke: discovery.revocation_endpoint,
      })
      expect(metadata.body).not.toContain('protocol/openid-connect')
    } finally {
      await other.close()
      await plain.close()
    }
  })
})
