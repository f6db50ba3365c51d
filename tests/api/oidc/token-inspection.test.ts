import { randomUUID } from 'node:crypto'
import * as oidc from 'openid-client'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { hashPassword } from '../../../src/identity/password-hashing.js'
import { createClient } from '../../../src/modules/clients/service.js'
import { buildTestApp } from '../../helpers/app.js'
import {
  bearer,
  createPatient,
  newOrganization,
  providerBody,
  TEST_PASSWORD,
  type TestOrganization,
  type TestUser,
  tokenFor,
} from '../../helpers/factories.js'

// UserInfo, introspection (RFC 7662) and revocation (RFC 7009) of the embedded issuer, driven by
// openid-client, an OpenID-certified relying party: what it sends and expects is the standard's,
// not ours. Its requests reach the app through inject(), over no socket.

let app: App
const issuer = 'http://localhost:8080/realms/ehr'
const realm = '/realms/ehr/protocol/openid-connect'
// The service promises that a revoked session's access tokens stop working within 5 s.
const PROMISED_MS = 5000

beforeAll(async () => {
  app = await buildTestApp()
})
afterAll(async () => {
  await app.close()
})

const viaInject: oidc.CustomFetch = async (url, options) => {
  const target = new URL(url)
  const response = await app.inject({
    method: options.method as 'GET' | 'POST',
    url: `${target.pathname}${target.search}`,
    headers: options.headers,
    ...(options.body === undefined ? {} : { payload: String(options.body) }),
  })
  const headers = new Headers()
  for (const [name, value] of Object.entries(response.headers)) {
    for (const one of [value].flat()) if (one !== undefined) headers.append(name, String(one))
  }
  const empty = response.statusCode === 204 || response.rawPayload.length === 0
  return new Response(empty ? null : response.rawPayload, { status: response.statusCode, headers })
}

/** openid-client configured from the issuer's discovery document, as `clientId` authenticating with `auth`. */
function discover(clientId: string, auth: oidc.ClientAuth) {
  return oidc.discovery(new URL(issuer), clientId, undefined, auth, {
    execute: [oidc.allowInsecureRequests],
    [oidc.customFetch]: viaInject,
  })
}

/** A confidential client of the organization, and openid-client configured as it. */
async function confidentialClient(org: TestOrganization, name: string) {
  const registered = await createClient(app.db, {
    organizationId: org.id,
    clientId: `${name}-${randomUUID().slice(0, 8)}`,
    name,
    roles: ['PROVIDER'],
  })
  return {
    ...registered,
    config: await discover(registered.clientId, oidc.ClientSecretBasic(registered.secret)),
  }
}

const publicClient = () => discover('ehr-api', oidc.None())

/** Signs in with the password grant through openid-client, as the public client unless one is given. */
async function signIn(user: TestUser, config?: oidc.Configuration, scope = 'openid') {
  return oidc.genericGrantRequest(config ?? (await publicClient()), 'password', {
    username: user.email,
    password: TEST_PASSWORD,
    scope,
  })
}

const form = (path: string, fields: Record<string, string>, headers: Record<string, string> = {}) =>
  app.inject({
    method: 'POST',
    url: `${realm}/${path}`,
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    payload: new URLSearchParams(fields).toString(),
  })

const me = (token: string) => app.inject({ url: '/api/auth/me', headers: bearer(token) })

/** Waits until the API refuses the token, as it does a signed-out session's. */
async function refusedByTheApi(token: string) {
  await expect
    .poll(async () => (await me(token)).statusCode, { timeout: PROMISED_MS, interval: 100 })
    .toBe(401)
}

describe('discovery of the token endpoints', () => {
  it('lists userinfo, introspection and revocation in the OpenID configuration, as openid-client reads it', async () => {
    const metadata = (await publicClient()).serverMetadata()
    expect(metadata).toMatchObject({
      issuer,
      userinfo_endpoint: `${issuer}/protocol/openid-connect/userinfo`,
      introspection_endpoint: `${issuer}/protocol/openid-connect/token/introspect`,
      revocation_endpoint: `${issuer}/protocol/openid-connect/revoke`,
      introspection_endpoint_auth_methods_supported: [
        'client_secret_basic',
        'client_secret_post',
        'private_key_jwt',
      ],
      introspection_endpoint_auth_signing_alg_values_supported: ['RS384', 'ES384'],
      revocation_endpoint_auth_methods_supported: [
        'client_secret_basic',
        'client_secret_post',
        'private_key_jwt',
        'none',
      ],
      revocation_endpoint_auth_signing_alg_values_supported: ['RS384', 'ES384'],
      code_challenge_methods_supported: ['S256'],
    })
    expect(metadata.claims_supported).toContain('fhirUser')
  })

  it('names them in the SMART configuration and the CapabilityStatement’s oauth-uris', async () => {
    const smart = (await app.inject({ url: '/fhir/R4/.well-known/smart-configuration' })).json()
    expect(smart).toMatchObject({
      introspection_endpoint: `${issuer}/protocol/openid-connect/token/introspect`,
      revocation_endpoint: `${issuer}/protocol/openid-connect/revoke`,
      userinfo_endpoint: `${issuer}/protocol/openid-connect/userinfo`,
      code_challenge_methods_supported: ['S256'],
    })
    const statement = (await app.inject({ url: '/fhir/R4/metadata' })).json()
    const uris = Object.fromEntries(
      (statement.rest[0].security.extension[0].extension as { url: string; valueUri: string }[]).map(
        ({ url, valueUri }) => [url, valueUri],
      ),
    )
    expect(uris).toMatchObject({
      token: `${issuer}/protocol/openid-connect/token`,
      introspect: `${issuer}/protocol/openid-connect/token/introspect`,
      revoke: `${issuer}/protocol/openid-connect/revoke`,
    })
  })
})

describe('GET and POST /realms/{realm}/protocol/openid-connect/userinfo', () => {
  let org: TestOrganization

  beforeAll(async () => {
    org = await newOrganization(app)
  })

  it('returns the claims of a provider’s account, with fhirUser its Practitioner', async () => {
    const admin = await org.user('ADMIN')
    const user = await org.user('PROVIDER')
    const created = await app.inject({
      method: 'POST',
      url: '/api/providers',
      headers: bearer(admin.token),
      payload: providerBody({ userId: user.id }),
    })
    expect(created.statusCode, created.body).toBe(201)
    const tokens = await signIn(user)
    const claims = await oidc.fetchUserInfo(await publicClient(), tokens.access_token, user.subject)
    expect(claims).toEqual({
      sub: user.subject,
      name: 'Test User',
      given_name: 'Test',
      family_name: 'User',
      preferred_username: user.email,
      email: user.email,
      email_verified: true,
      fhirUser: `Practitioner/${created.json().data.id}`,
    })
    const byPost = await app.inject({
      method: 'POST',
      url: `${realm}/userinfo`,
      headers: bearer(tokens.access_token),
    })
    expect(byPost.statusCode).toBe(200)
    expect(byPost.json()).toEqual(claims)
    const jsonBody = await app.inject({
      method: 'POST',
      url: `${realm}/userinfo`,
      headers: { ...bearer(tokens.access_token), 'content-type': 'application/json' },
      payload: '{}',
    })
    expect(jsonBody.statusCode).toBe(415)
    expect(jsonBody.json().error).toBe('invalid_request')
  })

  it('gives a patient’s own account its Patient, and an account linked to no record no fhirUser', async () => {
    const nurse = await org.user('NURSE')
    const patientId = await createPatient(app, nurse)
    const patient = await org.user('PATIENT')
    await app.db.updateTable('users').set({ patient_id: patientId }).where('id', '=', patient.id).execute()
    const patientClaims = await oidc.fetchUserInfo(
      await publicClient(),
      (await signIn(patient)).access_token,
      patient.subject,
    )
    expect(patientClaims.fhirUser).toBe(`Patient/${patientId}`)
    const nurseClaims = await oidc.fetchUserInfo(
      await publicClient(),
      (await signIn(nurse)).access_token,
      nurse.subject,
    )
    expect(nurseClaims.sub).toBe(nurse.subject)
    expect(nurseClaims.fhirUser).toBeUndefined()
  })

  it('returns 401 with a Bearer challenge for no token, and invalid_token for a bad, expired or revoked one', async () => {
    const user = await org.user('NURSE')
    const none = await app.inject({ url: `${realm}/userinfo` })
    expect(none.statusCode).toBe(401)
    expect(none.headers['www-authenticate']).toBe('Bearer')
    expect(none.json().error).toBe('invalid_request')

    const expired = tokenFor(app, user, -60)
    const signedIn = await signIn(user)
    const revoked = await form('revoke', { client_id: 'ehr-api', token: String(signedIn.refresh_token) })
    expect(revoked.statusCode).toBe(200)
    await refusedByTheApi(signedIn.access_token)
    for (const token of ['garbage', `${user.token.slice(0, -4)}AAAA`, expired, signedIn.access_token]) {
      const response = await app.inject({ url: `${realm}/userinfo`, headers: bearer(token) })
      expect(response.statusCode, token).toBe(401)
      expect(response.headers['www-authenticate']).toMatch(/^Bearer error="invalid_token"/)
      expect(response.json().error).toBe('invalid_token')
    }
    await expect(
      oidc.fetchUserInfo(await publicClient(), signedIn.access_token, user.subject),
    ).rejects.toThrow()
  })
})

describe('POST /realms/{realm}/protocol/openid-connect/token/introspect', () => {
  let org: TestOrganization
  let user: TestUser
  let resourceServer: Awaited<ReturnType<typeof confidentialClient>>

  beforeAll(async () => {
    org = await newOrganization(app)
    user = await org.user('PROVIDER')
    resourceServer = await confidentialClient(org, 'resource-server')
  })

  it('reports an access token active, with what it says', async () => {
    const tokens = await signIn(user, undefined, 'openid offline_access')
    const answer = await oidc.tokenIntrospection(resourceServer.config, tokens.access_token)
    expect(answer).toMatchObject({
      active: true,
      token_type: 'Bearer',
      scope: 'openid profile email offline_access',
      client_id: 'ehr-api',
      username: user.email,
      sub: user.subject,
      iss: issuer,
      aud: 'ehr-api',
      sid: tokens.session_state,
    })
    expect(answer.exp).toBeGreaterThan(Date.now() / 1000)
    expect(answer.iat).toBeLessThanOrEqual(Date.now() / 1000 + 1)
    expect(answer.fhirUser).toBeUndefined()
  })

  it('carries SMART’s patient and the system scopes of a service token', async () => {
    const patientId = await createPatient(app, await org.user('NURSE'))
    const launched = tokenFor(app, user, undefined, {
      scopes: ['patient/Observation.rs'],
      patient: String(patientId),
    })
    expect(await oidc.tokenIntrospection(resourceServer.config, launched)).toMatchObject({
      active: true,
      patient: String(patientId),
      scope: 'openid profile email patient/Observation.rs',
    })
    const service = await oidc.clientCredentialsGrant(resourceServer.config, {
      scope: 'system/Observation.rs',
    })
    expect(await oidc.tokenIntrospection(resourceServer.config, service.access_token)).toMatchObject({
      active: true,
      client_id: resourceServer.clientId,
      scope: 'openid profile email system/Observation.rs',
    })
  })

  it('reports a refresh token active, as a refresh_token, with the session’s client and scopes', async () => {
    const tokens = await signIn(user, undefined, 'openid online_access')
    const answer = await oidc.tokenIntrospection(resourceServer.config, String(tokens.refresh_token), {
      token_type_hint: 'refresh_token',
    })
    expect(answer).toMatchObject({
      active: true,
      token_type: 'refresh_token',
      client_id: 'ehr-api',
      sub: user.subject,
      username: user.email,
      scope: 'openid profile email online_access',
      sid: tokens.session_state,
    })
    expect(answer.exp).toBeGreaterThan(Date.now() / 1000 + 3600)
    // Once exchanged, a refresh token is spent.
    await oidc.refreshTokenGrant(await publicClient(), String(tokens.refresh_token))
    expect(await oidc.tokenIntrospection(resourceServer.config, String(tokens.refresh_token))).toEqual({
      active: false,
    })
  })

  it('answers { active: false } for garbage, an expired, a tampered, a revoked or an unknown token', async () => {
    const revoked = await signIn(user)
    await oidc.tokenRevocation(await publicClient(), String(revoked.refresh_token))
    const tokens = [
      'garbage',
      'a.b.c',
      tokenFor(app, user, -60),
      `${user.token.slice(0, -4)}AAAA`,
      revoked.access_token,
      String(revoked.refresh_token),
      'never-issued-refresh-token',
    ]
    for (const token of tokens) {
      const response = await form(
        'token/introspect',
        { token },
        {
          authorization: `Basic ${Buffer.from(`${resourceServer.clientId}:${resourceServer.secret}`).toString('base64')}`,
        },
      )
      expect(response.statusCode, token).toBe(200)
      expect(response.json(), token).toEqual({ active: false })
    }
  })

  it('reports tokens of another organization inactive, to a client of that other organization', async () => {
    const other = await newOrganization(app)
    const outsider = await confidentialClient(other, 'outsider')
    const tokens = await signIn(user)
    const service = await oidc.clientCredentialsGrant(resourceServer.config)
    for (const token of [tokens.access_token, String(tokens.refresh_token), service.access_token]) {
      expect(await oidc.tokenIntrospection(outsider.config, token)).toEqual({ active: false })
      expect((await oidc.tokenIntrospection(resourceServer.config, token)).active).toBe(true)
    }
  })

  it('lets a confidential SMART app introspect its organization’s tokens, and refuses a public one (401)', async () => {
    const admin = await org.user('ADMIN')
    const registered = async (confidential: boolean, secret?: string) => {
      const clientId = `app-${randomUUID().slice(0, 8)}`
      await app.db
        .insertInto('smart_apps')
        .values({
          organization_id: org.id,
          client_id: clientId,
          name: 'Population dashboard',
          confidential,
          secret_hash: secret ? await hashPassword(secret) : null,
          jwks: null,
          jwks_url: null,
          redirect_uris: ['https://app.example.test/callback'],
          scopes: ['openid'],
          launch_url: null,
          created_by: admin.id,
          disabled_at: null,
        })
        .execute()
      return clientId
    }
    const secret = randomUUID()
    const confidentialApp = await discover(await registered(true, secret), oidc.ClientSecretPost(secret))
    const tokens = await signIn(user)
    expect(await oidc.tokenIntrospection(confidentialApp, tokens.access_token)).toMatchObject({
      active: true,
      sub: user.subject,
    })
    const publicApp = await form('token/introspect', {
      token: tokens.access_token,
      client_id: await registered(false),
    })
    expect(publicApp.statusCode).toBe(401)
    expect(publicApp.json().error).toBe('invalid_client')
  })

  it('refuses the public client, a wrong secret and no client (401 invalid_client), and a missing token (400)', async () => {
    const tokens = await signIn(user)
    const anonymous = await form('token/introspect', { token: tokens.access_token })
    expect(anonymous.statusCode).toBe(401)
    expect(anonymous.json().error).toBe('invalid_client')
    const publicCaller = await form('token/introspect', { token: tokens.access_token, client_id: 'ehr-api' })
    expect(publicCaller.statusCode).toBe(401)
    expect(publicCaller.json().error).toBe('invalid_client')
    const wrongSecret = await form('token/introspect', {
      token: tokens.access_token,
      client_id: resourceServer.clientId,
      client_secret: 'guess',
    })
    expect(wrongSecret.statusCode).toBe(401)
    expect(wrongSecret.headers['www-authenticate']).toBe('Basic')
    const viaPost = await form('token/introspect', {
      token: tokens.access_token,
      client_id: resourceServer.clientId,
      client_secret: resourceServer.secret,
    })
    expect(viaPost.statusCode).toBe(200)
    expect(viaPost.headers['cache-control']).toBe('no-store')
    expect(viaPost.json().active).toBe(true)
    const noToken = await form('token/introspect', {
      client_id: resourceServer.clientId,
      client_secret: resourceServer.secret,
    })
    expect(noToken.statusCode).toBe(400)
    expect(noToken.json().error).toBe('invalid_request')
  })
})

describe('POST /realms/{realm}/protocol/openid-connect/revoke', () => {
  let org: TestOrganization
  let user: TestUser

  beforeAll(async () => {
    org = await newOrganization(app)
    user = await org.user('NURSE')
  })

  it('revokes a refresh token: its session ends, the refresh fails and the access token stops working', async () => {
    const config = await publicClient()
    const tokens = await signIn(user, config)
    expect((await me(tokens.access_token)).statusCode).toBe(200)
    await oidc.tokenRevocation(config, String(tokens.refresh_token), { token_type_hint: 'refresh_token' })
    await expect(oidc.refreshTokenGrant(config, String(tokens.refresh_token))).rejects.toMatchObject({
      error: 'invalid_grant',
    })
    await refusedByTheApi(tokens.access_token)
    const session = await app.db
      .selectFrom('sessions')
      .select('revoked_reason')
      .where('id', '=', String(tokens.session_state))
      .executeTakeFirstOrThrow()
    expect(session.revoked_reason).toBe('REVOKED')
  })

  it('revokes an access token: its session ends with it, refresh token included', async () => {
    const config = await publicClient()
    const tokens = await signIn(user, config)
    await oidc.tokenRevocation(config, tokens.access_token, { token_type_hint: 'access_token' })
    await refusedByTheApi(tokens.access_token)
    await expect(oidc.refreshTokenGrant(config, String(tokens.refresh_token))).rejects.toMatchObject({
      error: 'invalid_grant',
    })
  })

  it('revokes a confidential client’s own service token (client_credentials, no session until then)', async () => {
    const service = await confidentialClient(org, 'sync')
    const { access_token: token } = await oidc.clientCredentialsGrant(service.config)
    expect((await app.inject({ url: '/api/patients', headers: bearer(token) })).statusCode).toBe(200)
    await oidc.tokenRevocation(service.config, token)
    expect(await oidc.tokenIntrospection(service.config, token)).toEqual({ active: false })
    await expect
      .poll(async () => (await app.inject({ url: '/api/patients', headers: bearer(token) })).statusCode, {
        timeout: PROMISED_MS,
        interval: 100,
      })
      .toBe(401)
    // Revoking again changes nothing.
    await oidc.tokenRevocation(service.config, token)
  })

  it('refuses a token issued to another client (400 unauthorized_client), revoking nothing', async () => {
    const service = await confidentialClient(org, 'other-client')
    const tokens = await signIn(user)
    for (const token of [tokens.access_token, String(tokens.refresh_token)]) {
      await expect(oidc.tokenRevocation(service.config, token)).rejects.toMatchObject({
        error: 'unauthorized_client',
      })
      expect((await oidc.tokenIntrospection(service.config, token)).active).toBe(true)
    }
    const own = await oidc.clientCredentialsGrant(service.config)
    const byPublicClient = await form('revoke', { client_id: 'ehr-api', token: own.access_token })
    expect(byPublicClient.statusCode).toBe(400)
    expect(byPublicClient.json().error).toBe('unauthorized_client')
    expect((await oidc.tokenIntrospection(service.config, own.access_token)).active).toBe(true)
  })

  it('answers 200 for unknown, invalid and expired tokens, and refuses a request without a client or token', async () => {
    for (const token of ['never-issued', 'a.b.c', tokenFor(app, user, -60)]) {
      const response = await form('revoke', { client_id: 'ehr-api', token })
      expect(response.statusCode, token).toBe(200)
      expect(response.body).toBe('')
    }
    const noClient = await form('revoke', { token: 'never-issued' })
    expect(noClient.statusCode).toBe(401)
    expect(noClient.json().error).toBe('invalid_client')
    const wrongSecret = await form('revoke', { token: 'x', client_id: 'unknown-client', client_secret: 'x' })
    expect(wrongSecret.statusCode).toBe(401)
    const noToken = await form('revoke', { client_id: 'ehr-api' })
    expect(noToken.statusCode).toBe(400)
    expect(noToken.json().error).toBe('invalid_request')
  })
})
