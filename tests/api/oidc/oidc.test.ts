import { createLocalJWKSet, decodeJwt, jwtVerify } from 'jose'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { rotateSigningKey } from '../../../src/identity/signing-keys.js'
import { createClient } from '../../../src/modules/clients/service.js'
import { buildTestApp } from '../../helpers/app.js'
import {
  bearer,
  newOrganization,
  TEST_PASSWORD,
  type TestOrganization,
  type TestUser,
} from '../../helpers/factories.js'

let app: App
const realm = '/realms/ehr/protocol/openid-connect'
const issuer = 'http://localhost:8080/realms/ehr'

beforeAll(async () => {
  app = await buildTestApp()
})
afterAll(async () => {
  await app.close()
})

const form = (url: string, fields: Record<string, string>, headers: Record<string, string> = {}) =>
  app.inject({
    method: 'POST',
    url,
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    payload: new URLSearchParams(fields).toString(),
  })
const token = (fields: Record<string, string>, headers?: Record<string, string>) =>
  form(`${realm}/token`, fields, headers)
const basic = (id: string, secret: string) => ({
  authorization: `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`,
})

describe('discovery and keys', () => {
  it('serves the discovery document at the Keycloak path', async () => {
    const response = await app.inject({ url: '/realms/ehr/.well-known/openid-configuration' })
    expect(response.statusCode).toBe(200)
    expect(response.json()).toMatchObject({
      issuer,
      token_endpoint: `${issuer}/protocol/openid-connect/token`,
      end_session_endpoint: `${issuer}/protocol/openid-connect/logout`,
      jwks_uri: `${issuer}/protocol/openid-connect/certs`,
      authorization_endpoint: `${issuer}/protocol/openid-connect/auth`,
      grant_types_supported: ['authorization_code', 'password', 'client_credentials', 'refresh_token'],
    })
  })

  it('publishes keys that verify issued tokens, and keeps a rotated key until its tokens expire', async () => {
    const user = await (await newOrganization(app)).user('NURSE')
    const issued = (
      await token({
        grant_type: 'password',
        client_id: 'ehr-api',
        username: user.email,
        password: TEST_PASSWORD,
      })
    ).json()
    const before = (await app.inject({ url: `${realm}/certs` })).json()
    const { payload } = await jwtVerify(issued.access_token, createLocalJWKSet(before), {
      issuer,
      audience: 'ehr-api',
    })
    expect(payload.sub).toBe(user.subject)

    const newKid = await rotateSigningKey(app.db, app.secretBox)
    const after = (await app.inject({ url: `${realm}/certs` })).json()
    const kids = after.keys.map((key: { kid: string }) => key.kid)
    expect(kids).toContain(newKid)
    expect(kids).toEqual(expect.arrayContaining(before.keys.map((key: { kid: string }) => key.kid)))
    expect(after.keys[0]).toMatchObject({ kty: 'RSA', alg: 'RS256', use: 'sig' })
  })
})

describe('POST /realms/{realm}/protocol/openid-connect/token', () => {
  let org: TestOrganization
  let user: TestUser

  beforeAll(async () => {
    org = await newOrganization(app)
    user = await org.user('PROVIDER')
  })

  it('password grant returns the Keycloak token set, usable on the API', async () => {
    const response = await token({
      grant_type: 'password',
      client_id: 'ehr-api',
      username: user.email,
      password: TEST_PASSWORD,
      scope: 'openid',
    })
    expect(response.statusCode).toBe(200)
    expect(response.headers['cache-control']).toBe('no-store')
    const set = response.json()
    expect(Object.keys(set).sort()).toEqual(
      [
        'access_token',
        'expires_in',
        'not-before-policy',
        'refresh_expires_in',
        'refresh_token',
        'scope',
        'session_state',
        'token_type',
      ].sort(),
    )
    expect(set).toMatchObject({
      expires_in: 3600,
      refresh_expires_in: 86400,
      token_type: 'Bearer',
      'not-before-policy': 0,
    })
    expect(decodeJwt(set.access_token)).toMatchObject({
      session_state: set.session_state,
      azp: 'ehr-api',
      groups: [org.groupPath],
    })
    expect((await app.inject({ url: '/api/patients', headers: bearer(set.access_token) })).statusCode).toBe(
      200,
    )
  })

  it('answers wrong credentials, unknown clients and bad requests in the OAuth error format', async () => {
    const wrongPassword = await token({
      grant_type: 'password',
      client_id: 'ehr-api',
      username: user.email,
      password: 'nope-nope-nope',
    })
    expect(wrongPassword.statusCode).toBe(401)
    expect(wrongPassword.json()).toEqual({
      error: 'invalid_grant',
      error_description: 'Invalid user credentials',
    })

    const unknownClient = await token({
      grant_type: 'password',
      client_id: 'who-knows',
      username: user.email,
      password: TEST_PASSWORD,
    })
    expect(unknownClient.statusCode).toBe(401)
    expect(unknownClient.json().error).toBe('invalid_client')

    const noGrant = await token({ client_id: 'ehr-api' })
    expect(noGrant.statusCode).toBe(400)
    expect(noGrant.json().error).toBe('invalid_request')

    const strangeGrant = await token({ grant_type: 'implicit', client_id: 'ehr-api' })
    expect(strangeGrant.statusCode).toBe(400)
    expect(strangeGrant.json().error).toBe('unsupported_grant_type')

    const json = await app.inject({
      method: 'POST',
      url: `${realm}/token`,
      payload: { grant_type: 'password' },
    })
    expect(json.statusCode).toBe(415)
  })

  it('refresh_token grant rotates, and a reused or foreign refresh token is invalid_grant', async () => {
    const first = (
      await token({
        grant_type: 'password',
        client_id: 'ehr-api',
        username: user.email,
        password: TEST_PASSWORD,
      })
    ).json()
    const second = await token({
      grant_type: 'refresh_token',
      client_id: 'ehr-api',
      refresh_token: first.refresh_token,
    })
    expect(second.statusCode).toBe(200)
    expect(second.json().refresh_token).not.toBe(first.refresh_token)
    expect(second.json().session_state).toBe(first.session_state)

    const reused = await token({
      grant_type: 'refresh_token',
      client_id: 'ehr-api',
      refresh_token: first.refresh_token,
    })
    expect(reused.statusCode).toBe(400)
    expect(reused.json()).toEqual({ error: 'invalid_grant', error_description: 'Invalid refresh token' })
    const afterReuse = await token({
      grant_type: 'refresh_token',
      client_id: 'ehr-api',
      refresh_token: second.json().refresh_token,
    })
    expect(afterReuse.statusCode).toBe(400)
  })

  it('grants online_access and offline_access when asked, keeps them on refresh, and refreshes a public client without client_id', async () => {
    for (const asked of ['offline_access', 'online_access', 'openid online_access offline_access']) {
      const signedIn = await token({
        grant_type: 'password',
        client_id: 'ehr-api',
        username: user.email,
        password: TEST_PASSWORD,
        scope: asked,
      })
      expect(signedIn.statusCode, asked).toBe(200)
      const granted = [
        'openid',
        'profile',
        'email',
        ...asked.split(' ').filter((scope) => scope !== 'openid'),
      ]
      expect(signedIn.json().scope, asked).toBe(granted.join(' '))
      const refreshed = await token({
        grant_type: 'refresh_token',
        refresh_token: signedIn.json().refresh_token,
      })
      expect(refreshed.statusCode, refreshed.body).toBe(200)
      expect(refreshed.json().scope, asked).toBe(granted.join(' '))
      expect(refreshed.json().refresh_token).toBeTruthy()
    }
    const plain = await token({
      grant_type: 'password',
      client_id: 'ehr-api',
      username: user.email,
      password: TEST_PASSWORD,
      scope: 'openid something-else',
    })
    expect(plain.json().scope).toBe('openid profile email')
  })

  it('refuses a refresh without client credentials of a confidential client’s session (invalid_grant)', async () => {
    const integration = await createClient(app.db, {
      organizationId: org.id,
      clientId: `portal-${org.id}`,
      name: 'Portal',
      roles: ['NURSE'],
    })
    const signedIn = await token(
      { grant_type: 'password', username: user.email, password: TEST_PASSWORD },
      basic(integration.clientId, integration.secret),
    )
    expect(signedIn.statusCode, signedIn.body).toBe(200)
    const anonymous = await token({
      grant_type: 'refresh_token',
      refresh_token: signedIn.json().refresh_token,
    })
    expect(anonymous.statusCode).toBe(400)
    expect(anonymous.json().error).toBe('invalid_grant')
  })

  it('client_credentials issues a service-account token that carries the client roles', async () => {
    const integration = await createClient(app.db, {
      organizationId: org.id,
      clientId: `billing-sync-${org.id}`,
      name: 'Billing sync',
      roles: ['PROVIDER'],
    })
    const viaBasic = await token(
      { grant_type: 'client_credentials' },
      basic(integration.clientId, integration.secret),
    )
    expect(viaBasic.statusCode).toBe(200)
    const set = viaBasic.json()
    expect(set.refresh_token).toBeUndefined()
    expect(set.refresh_expires_in).toBe(0)
    expect(decodeJwt(set.access_token)).toMatchObject({
      azp: integration.clientId,
      aud: 'ehr-api',
      realm_access: { roles: ['PROVIDER'] },
      groups: [org.groupPath],
    })
    const listed = await app.inject({ url: '/api/patients', headers: bearer(set.access_token) })
    expect(listed.statusCode).toBe(200)

    const viaForm = await token({
      grant_type: 'client_credentials',
      client_id: integration.clientId,
      client_secret: integration.secret,
    })
    expect(viaForm.statusCode).toBe(200)

    const wrongSecret = await token(
      { grant_type: 'client_credentials' },
      basic(integration.clientId, 'guess'),
    )
    expect(wrongSecret.statusCode).toBe(401)
    expect(wrongSecret.headers['www-authenticate']).toBe('Basic')
    expect(wrongSecret.json().error).toBe('invalid_client')

    const publicClient = await token({ grant_type: 'client_credentials', client_id: 'ehr-api' })
    expect(publicClient.statusCode).toBe(400)
    expect(publicClient.json().error).toBe('unauthorized_client')
  })

  it('client_credentials grants SMART Backend Services scopes, which then narrow the FHIR interface', async () => {
    const integration = await createClient(app.db, {
      organizationId: org.id,
      clientId: `fhir-sync-${org.id}`,
      name: 'FHIR sync',
      roles: ['PROVIDER'],
    })
    const granted = await token(
      { grant_type: 'client_credentials', scope: 'openid system/Observation.rs' },
      basic(integration.clientId, integration.secret),
    )
    expect(granted.statusCode).toBe(200)
    expect(granted.json().scope).toBe('openid profile email system/Observation.rs')
    expect(decodeJwt(granted.json().access_token).scope).toBe('openid profile email system/Observation.rs')
    const patients = await app.inject({
      url: '/fhir/R4/Patient',
      headers: bearer(granted.json().access_token),
    })
    expect(patients.statusCode).toBe(403)

    for (const scope of ['patient/Patient.read', 'system/Patient.write-ish', 'admin']) {
      const refused = await token(
        { grant_type: 'client_credentials', scope },
        basic(integration.clientId, integration.secret),
      )
      expect(refused.statusCode, scope).toBe(400)
      expect(refused.json().error).toBe('invalid_scope')
    }
  })

  it('answers a temporary password with invalid_grant and no tokens', async () => {
    const temporary = await org.user('NURSE')
    await app.db
      .updateTable('users')
      .set({ password_change_required: true })
      .where('id', '=', temporary.id)
      .execute()
    const response = await token({
      grant_type: 'password',
      client_id: 'ehr-api',
      username: temporary.email,
      password: TEST_PASSWORD,
    })
    expect(response.statusCode).toBe(400)
    expect(response.json()).toEqual({
      error: 'invalid_grant',
      error_description: 'Account is not fully set up',
    })
  })
})

describe('POST /realms/{realm}/protocol/openid-connect/logout', () => {
  it('ends the session: 204, then its refresh token is invalid_grant', async () => {
    const user = await (await newOrganization(app)).user('PROVIDER')
    const set = (
      await token({
        grant_type: 'password',
        client_id: 'ehr-api',
        username: user.email,
        password: TEST_PASSWORD,
      })
    ).json()
    const response = await form(`${realm}/logout`, { client_id: 'ehr-api', refresh_token: set.refresh_token })
    expect(response.statusCode).toBe(204)
    const refreshed = await token({
      grant_type: 'refresh_token',
      client_id: 'ehr-api',
      refresh_token: set.refresh_token,
    })
    expect(refreshed.statusCode).toBe(400)
    expect(refreshed.json().error).toBe('invalid_grant')
    const again = await form(`${realm}/logout`, { client_id: 'ehr-api', refresh_token: set.refresh_token })
    expect(again.statusCode).toBe(204)
    const unknown = await form(`${realm}/logout`, { client_id: 'ehr-api', refresh_token: 'never-issued' })
    expect(unknown.statusCode).toBe(400)
  })
})
