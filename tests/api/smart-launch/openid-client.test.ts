import { randomUUID } from 'node:crypto'
import { exportJWK, generateKeyPair } from 'jose'
import * as oidc from 'openid-client'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { createClient } from '../../../src/modules/clients/service.js'
import { bearer, newOrganization, providerBody, type TestUser } from '../../helpers/factories.js'
import { listeningFhirApp } from '../../helpers/fhir-client.js'
import { Browser, codeOf, consent, REDIRECT_URI, registerApp, signIn } from '../../helpers/smart-launch.js'
import { registeredApp } from '../smart-apps/smart-apps.js'

// SMART App Launch's code flow driven by openid-client, an OpenID-certified relying party, over a
// real socket: discovery, the authorization request it builds (PKCE S256, state, nonce, SMART's
// aud), and its checks of the answers (the ID token's signature by the published keys, its iss,
// aud, nonce; the state, the iss of the redirect). What it sends and expects is the standard's.

let app: App
let issuer: URL
let fhirBase: string

beforeAll(async () => {
  // Every request here is anonymous, from one address: well past the default anonymous limit.
  const listening = await listeningFhirApp({ RATE_LIMIT_ANONYMOUS: '100000' })
  app = listening.app
  fhirBase = listening.baseUrl
  issuer = new URL(`${new URL(fhirBase).origin}/realms/ehr`)
})
afterAll(async () => {
  await app.close()
})

const SCOPE = 'openid fhirUser profile offline_access user/Patient.rs'

/** openid-client configured from the issuer's discovery, checking ID token signatures too. */
function discover(clientId: string, auth: oidc.ClientAuth, fetch?: oidc.CustomFetch) {
  return oidc.discovery(issuer, clientId, undefined, auth, {
    // The loopback issuer is http; non-repudiation checks verify the ID token's signature by the JWKS.
    execute: [oidc.allowInsecureRequests, oidc.enableNonRepudiationChecks],
    ...(fetch ? { [oidc.customFetch]: fetch } : {}),
  })
}

/** A provider of a new practice whose account is linked to its provider record (its fhirUser). */
async function practice() {
  const org = await newOrganization(app)
  const admin = await org.user('ADMIN')
  const provider = await org.user('PROVIDER')
  const created = await app.inject({
    method: 'POST',
    url: '/api/providers',
    headers: bearer(admin.token),
    payload: providerBody({ userId: provider.id }),
  })
  expect(created.statusCode, created.body).toBe(201)
  return { org, admin, provider, practitioner: `Practitioner/${created.json().data.id}` }
}

interface Authorization {
  callback: URL
  verifier: string
  state: string
  nonce: string
}

/**
 * The authorization request openid-client builds, answered as a browser would (sign-in, consent):
 * the URL the app is sent back to, and the checks the app keeps for the exchange.
 */
async function authorize(config: oidc.Configuration, user: TestUser): Promise<Authorization> {
  const verifier = oidc.randomPKCECodeVerifier()
  const state = oidc.randomState()
  const nonce = oidc.randomNonce()
  const url = oidc.buildAuthorizationUrl(config, {
    redirect_uri: REDIRECT_URI,
    scope: SCOPE,
    code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state,
    nonce,
    aud: fhirBase,
  })
  expect(`${url.origin}${url.pathname}`).toBe(config.serverMetadata().authorization_endpoint)
  const browser = new Browser(app)
  const page = await browser.request('GET', `${url.pathname}${url.search}`)
  expect(page.statusCode, page.body).toBe(200)
  const signedIn = await signIn(browser, page.body, user)
  const back = signedIn.statusCode === 303 ? signedIn : await consent(browser, signedIn.body, 'approve')
  expect(back.statusCode, back.body).toBe(303)
  expect(codeOf(back.headers.location).code).toEqual(expect.any(String))
  return { callback: new URL(back.headers.location as string), verifier, state, nonce }
}

const checksOf = ({ verifier, state, nonce }: Authorization) => ({
  pkceCodeVerifier: verifier,
  expectedState: state,
  expectedNonce: nonce,
  idTokenExpected: true,
})

/**
 * The status and OAuth error of a request the server refused, as openid-client reports it (a 401
 * with a WWW-Authenticate challenge comes with the response unread); a failure when it succeeded.
 */
async function refusal(request: Promise<unknown>): Promise<{ status: number; error: string }> {
  try {
    await request
  } catch (thrown) {
    const { status, error, response } = thrown as { status?: number; error?: string; response?: Response }
    if (status === undefined) throw thrown
    return {
      status,
      error: error ?? ((await response?.json()) as { error?: string } | undefined)?.error ?? '',
    }
  }
  throw new Error('the request succeeded')
}

/** A confidential client of the organization, as openid-client configured with its secret. */
async function introspector(orgId: number) {
  const registered = await createClient(app.db, {
    organizationId: orgId,
    clientId: `introspector-${randomUUID().slice(0, 8)}`,
    name: 'Introspector',
    roles: ['PROVIDER'],
  })
  return discover(registered.clientId, oidc.ClientSecretBasic(registered.secret))
}

describe('a public app (PKCE, no client authentication)', () => {
  it('gets a verified ID token with fhirUser, refreshes, reads UserInfo, and its revoked token is inactive', async () => {
    const { org, admin, provider, practitioner } = await practice()
    const registered = await registerApp(app, org, admin, { scopes: SCOPE.split(' ') })
    const config = await discover(registered.clientId, oidc.None())
    const authorization = await authorize(config, provider)

    const tokens = await oidc.authorizationCodeGrant(config, authorization.callback, checksOf(authorization))
    const claims = tokens.claims()
    expect(claims).toMatchObject({
      iss: issuer.href,
      aud: registered.clientId,
      sub: provider.subject,
      nonce: authorization.nonce,
      fhirUser: practitioner,
    })
    expect(tokens.scope?.split(' ').sort()).toEqual(SCOPE.split(' ').sort())

    const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token as string)
    expect(refreshed.access_token).not.toBe(tokens.access_token)
    expect(refreshed.refresh_token).toEqual(expect.any(String))
    expect(refreshed.refresh_token).not.toBe(tokens.refresh_token)

    const info = await oidc.fetchUserInfo(config, refreshed.access_token, provider.subject)
    expect(info).toMatchObject({ sub: provider.subject, fhirUser: practitioner })

    const inspecting = await introspector(org.id)
    const live = await oidc.tokenIntrospection(inspecting, refreshed.access_token)
    expect(live).toMatchObject({ active: true, client_id: registered.clientId, sub: provider.subject })
    expect(await oidc.tokenIntrospection(inspecting, refreshed.refresh_token as string)).toMatchObject({
      active: true,
      token_type: 'refresh_token',
    })
    await oidc.tokenRevocation(config, refreshed.refresh_token as string)
    expect(await oidc.tokenIntrospection(inspecting, refreshed.access_token)).toEqual({ active: false })
    expect(await oidc.tokenIntrospection(inspecting, refreshed.refresh_token as string)).toEqual({
      active: false,
    })
  })

  it('fails the exchange on a wrong PKCE verifier, state or nonce', async () => {
    const { org, admin, provider } = await practice()
    const registered = await registerApp(app, org, admin, { scopes: SCOPE.split(' ') })
    const config = await discover(registered.clientId, oidc.None())

    // The server checks the verifier: the code is refused.
    const wrongVerifier = await authorize(config, provider)
    const verifierRefused = await refusal(
      oidc.authorizationCodeGrant(config, wrongVerifier.callback, {
        ...checksOf(wrongVerifier),
        pkceCodeVerifier: oidc.randomPKCECodeVerifier(),
      }),
    )
    expect(verifierRefused).toMatchObject({ error: 'invalid_grant', status: 400 })

    // The client checks the state before anything is sent, and the nonce in the ID token.
    const wrongState = await authorize(config, provider)
    await expect(
      oidc.authorizationCodeGrant(config, wrongState.callback, {
        ...checksOf(wrongState),
        expectedState: oidc.randomState(),
      }),
    ).rejects.toMatchObject({ cause: { message: expect.stringMatching(/"state"/) } })
    const wrongNonce = await authorize(config, provider)
    await expect(
      oidc.authorizationCodeGrant(config, wrongNonce.callback, {
        ...checksOf(wrongNonce),
        expectedNonce: oidc.randomNonce(),
      }),
    ).rejects.toMatchObject({ cause: { message: expect.stringMatching(/"nonce"/) } })
  })

  it('verifies the ID token’s signature against the published keys', async () => {
    const { org, admin, provider } = await practice()
    const registered = await registerApp(app, org, admin, { scopes: SCOPE.split(' ') })
    // The token response as a network in between could alter it: the ID token's signature broken.
    const tampering: oidc.CustomFetch = async (url, options) => {
      const response = await fetch(url, options as RequestInit)
      if (!url.endsWith('/protocol/openid-connect/token')) return response
      const body = (await response.json()) as { id_token: string }
      const [header, payload, signature] = body.id_token.split('.')
      const flipped = `${signature?.startsWith('A') ? 'B' : 'A'}${signature?.slice(1)}`
      return Response.json({ ...body, id_token: `${header}.${payload}.${flipped}` }, response)
    }
    const config = await discover(registered.clientId, oidc.None(), tampering)
    const authorization = await authorize(config, provider)
    await expect(
      oidc.authorizationCodeGrant(config, authorization.callback, checksOf(authorization)),
    ).rejects.toMatchObject({ cause: { message: 'JWT signature verification failed' } })
  })
})

describe('a confidential app (client secret)', () => {
  it.each([
    ['client_secret_basic', oidc.ClientSecretBasic],
    ['client_secret_post', oidc.ClientSecretPost],
  ])('exchanges its code with %s, introspects and revokes its own tokens', async (_method, method) => {
    const { admin, provider, practitioner } = await practice()
    const created = await registeredApp(app, admin, {
      name: 'Chart Viewer',
      type: 'confidential',
      redirectUris: [REDIRECT_URI],
      scopes: SCOPE.split(' '),
    })
    const secret = created.clientSecret as string
    const config = await discover(created.clientId, method(secret))
    const authorization = await authorize(config, provider)
    const tokens = await oidc.authorizationCodeGrant(config, authorization.callback, checksOf(authorization))
    expect(tokens.claims()).toMatchObject({ aud: created.clientId, fhirUser: practitioner })

    expect(await oidc.tokenIntrospection(config, tokens.access_token)).toMatchObject({
      active: true,
      client_id: created.clientId,
    })
    await oidc.tokenRevocation(config, tokens.access_token)
    expect(await oidc.tokenIntrospection(config, tokens.access_token)).toEqual({ active: false })
    expect(await refusal(oidc.refreshTokenGrant(config, tokens.refresh_token as string))).toMatchObject({
      error: 'invalid_grant',
    })
  })

  it('is refused with a wrong secret, and the code is still good for the right one', async () => {
    const { admin, provider } = await practice()
    const created = await registeredApp(app, admin, {
      name: 'Chart Viewer',
      type: 'confidential',
      redirectUris: [REDIRECT_URI],
      scopes: SCOPE.split(' '),
    })
    const wrong = await discover(created.clientId, oidc.ClientSecretBasic(`${created.clientSecret}x`))
    const authorization = await authorize(wrong, provider)
    expect(
      await refusal(oidc.authorizationCodeGrant(wrong, authorization.callback, checksOf(authorization))),
    ).toMatchObject({ error: 'invalid_client', status: 401 })
    const none = await discover(created.clientId, oidc.None())
    expect(
      await refusal(oidc.authorizationCodeGrant(none, authorization.callback, checksOf(authorization))),
    ).toMatchObject({ error: 'invalid_client', status: 401 })

    const right = await discover(created.clientId, oidc.ClientSecretPost(created.clientSecret as string))
    const tokens = await oidc.authorizationCodeGrant(right, authorization.callback, checksOf(authorization))
    expect(tokens.access_token).toEqual(expect.any(String))
  })
})

/** A signing key pair: the private key as openid-client takes it, and the public JWK to register. */
async function signingKey(alg: 'ES384' | 'RS384') {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true })
  const kid = randomUUID()
  return { kid, privateKey, jwk: { ...(await exportJWK(publicKey)), kid, alg } }
}

/** A confidential app registered with public keys only, and the keys it signs with. */
async function appWithKeys(admin: TestUser, ...keys: Awaited<ReturnType<typeof signingKey>>[]) {
  const created = await registeredApp(app, admin, {
    name: 'Chart Viewer',
    type: 'confidential',
    redirectUris: [REDIRECT_URI],
    scopes: SCOPE.split(' '),
    jwks: { keys: keys.map((key) => key.jwk) },
  })
  expect(created).toMatchObject({ hasSecret: false })
  expect(created.clientSecret).toBeUndefined()
  return created
}

/** openid-client authenticating as the app by assertions signed with `key`, altered by `modify`. */
function asserting(
  clientId: string,
  key: Awaited<ReturnType<typeof signingKey>>,
  modify?: (payload: Record<string, unknown>) => void,
) {
  return discover(
    clientId,
    oidc.PrivateKeyJwt(
      { key: key.privateKey, kid: key.kid },
      modify ? { [oidc.modifyAssertion]: (_header, payload) => modify(payload) } : {},
    ),
  )
}

describe('a confidential app with keys (private_key_jwt)', () => {
  it('is advertised: SMART’s client-confidential-asymmetric, and private_key_jwt wherever a client authenticates', async () => {
    const smart = (await fetch(`${fhirBase}/.well-known/smart-configuration`).then((answer) =>
      answer.json(),
    )) as Record<string, string[]>
    expect(smart.capabilities).toContain('client-confidential-asymmetric')
    expect(smart.token_endpoint_auth_methods_supported).toContain('private_key_jwt')
    expect(smart.token_endpoint_auth_signing_alg_values_supported).toEqual(['RS384', 'ES384'])
    const metadata = (await discover('any', oidc.None())).serverMetadata()
    for (const endpoint of ['token', 'introspection', 'revocation'] as const) {
      expect(metadata[`${endpoint}_endpoint_auth_methods_supported`]).toContain('private_key_jwt')
      expect(metadata[`${endpoint}_endpoint_auth_signing_alg_values_supported`]).toEqual(['RS384', 'ES384'])
    }
  })

  it.each(['ES384', 'RS384'] as const)(
    'exchanges its code and refreshes with assertions signed in %s',
    async (alg) => {
      const { admin, provider, practitioner } = await practice()
      const key = await signingKey(alg)
      const created = await appWithKeys(admin, key)
      const config = await asserting(created.clientId, key)
      const authorization = await authorize(config, provider)
      const tokens = await oidc.authorizationCodeGrant(
        config,
        authorization.callback,
        checksOf(authorization),
      )
      expect(tokens.claims()).toMatchObject({ aud: created.clientId, fhirUser: practitioner })
      const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token as string)
      expect(refreshed.access_token).toEqual(expect.any(String))
      const info = await oidc.fetchUserInfo(config, refreshed.access_token, provider.subject)
      expect(info.fhirUser).toBe(practitioner)

      // Introspection and revocation take the same assertions.
      expect(await oidc.tokenIntrospection(config, refreshed.access_token)).toMatchObject({
        active: true,
        client_id: created.clientId,
      })
      await oidc.tokenRevocation(config, refreshed.refresh_token as string)
      expect(await oidc.tokenIntrospection(config, refreshed.access_token)).toEqual({ active: false })
      expect(await oidc.tokenIntrospection(config, refreshed.refresh_token as string)).toEqual({
        active: false,
      })
    },
  )

  it('refuses another key, a secret, an expired or long-lived assertion, another audience; the code stays good', async () => {
    const { admin, provider } = await practice()
    const key = await signingKey('ES384')
    const created = await appWithKeys(admin, key)
    const good = await asserting(created.clientId, key)
    const authorization = await authorize(good, provider)
    const exchange = (config: oidc.Configuration) =>
      refusal(oidc.authorizationCodeGrant(config, authorization.callback, checksOf(authorization)))
    const now = Math.floor(Date.now() / 1000)
    const stranger = await signingKey('ES384')
    const refused = [
      // Signed by a key the app did not register, under its registered key's id and under its own.
      await asserting(created.clientId, { ...stranger, kid: key.kid }),
      await asserting(created.clientId, stranger),
      await discover(created.clientId, oidc.ClientSecretBasic('no-secret-was-issued')),
      await discover(created.clientId, oidc.None()),
      await asserting(created.clientId, key, (payload) => {
        payload.iat = now - 600
        payload.nbf = now - 600
        payload.exp = now - 300
      }),
      await asserting(created.clientId, key, (payload) => {
        payload.exp = now + 3600
      }),
      await asserting(created.clientId, key, (payload) => {
        payload.aud = 'https://other.example.test/token'
      }),
      await asserting(created.clientId, key, (payload) => {
        payload.sub = 'someone-else'
      }),
    ]
    for (const [index, config] of refused.entries()) {
      expect(await exchange(config), `case ${index}`).toEqual({ status: 401, error: 'invalid_client' })
    }
    const tokens = await oidc.authorizationCodeGrant(good, authorization.callback, checksOf(authorization))
    expect(tokens.access_token).toEqual(expect.any(String))
    for (const config of refused.slice(0, 2)) {
      expect(await refusal(oidc.tokenIntrospection(config, tokens.access_token))).toEqual({
        status: 401,
        error: 'invalid_client',
      })
      expect(await refusal(oidc.tokenRevocation(config, tokens.access_token))).toEqual({
        status: 401,
        error: 'invalid_client',
      })
    }
    expect(await oidc.tokenIntrospection(good, tokens.access_token)).toMatchObject({ active: true })
  })

  it('takes an assertion once: its jti used again is refused', async () => {
    const { admin, provider } = await practice()
    const key = await signingKey('RS384')
    const created = await appWithKeys(admin, key)
    const jti = randomUUID()
    const sameJti = await asserting(created.clientId, key, (payload) => {
      payload.jti = jti
    })
    const authorization = await authorize(sameJti, provider)
    const tokens = await oidc.authorizationCodeGrant(sameJti, authorization.callback, checksOf(authorization))
    expect(await refusal(oidc.refreshTokenGrant(sameJti, tokens.refresh_token as string))).toEqual({
      status: 401,
      error: 'invalid_client',
    })
    // The refresh token was not spent by the refused request.
    const fresh = await asserting(created.clientId, key)
    expect((await oidc.refreshTokenGrant(fresh, tokens.refresh_token as string)).access_token).toEqual(
      expect.any(String),
    )
  })

  it('stops working when the app is deactivated, and a public app cannot assert', async () => {
    const { org, admin, provider } = await practice()
    const key = await signingKey('ES384')
    const created = await appWithKeys(admin, key)
    const config = await asserting(created.clientId, key)
    const authorization = await authorize(config, provider)
    const deactivated = await app.inject({
      method: 'POST',
      url: `/api/smart-apps/${created.id}/deactivate`,
      headers: bearer(admin.token),
    })
    expect(deactivated.statusCode, deactivated.body).toBe(200)
    expect(
      await refusal(oidc.authorizationCodeGrant(config, authorization.callback, checksOf(authorization))),
    ).toEqual({ status: 401, error: 'invalid_client' })

    const open = await registerApp(app, org, admin, { scopes: SCOPE.split(' ') })
    const publicConfig = await discover(open.clientId, oidc.None())
    const publicAuthorization = await authorize(publicConfig, provider)
    expect(
      await refusal(
        oidc.authorizationCodeGrant(
          await asserting(open.clientId, key),
          publicAuthorization.callback,
          checksOf(publicAuthorization),
        ),
      ),
    ).toEqual({ status: 401, error: 'invalid_client' })
  })
})
