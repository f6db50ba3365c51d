import { createLocalJWKSet, decodeJwt, jwtVerify } from 'jose'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { buildTestApp } from '../../helpers/app.js'
import { bearer, createPatient, newOrganization } from '../../helpers/factories.js'
import {
  AUTHORIZE_PATH,
  authorizationQuery,
  Browser,
  codeOf,
  consent,
  FHIR_BASE,
  formOf,
  ISSUER,
  PUBLIC_URL,
  pkcePair,
  REDIRECT_URI,
  registerApp,
  signIn,
  TOKEN_PATH,
} from '../../helpers/smart-launch.js'

// SMART App Launch's authorization code flow with PKCE on the embedded issuer, driven as a browser
// and an app would: the authorization endpoint, its sign-in and consent pages, the code's exchange.

let app: App

beforeAll(async () => {
  app = await buildTestApp({ PUBLIC_URL })
})
afterAll(async () => {
  await app.close()
})

async function practice(
  scopes = ['openid', 'fhirUser', 'profile', 'offline_access', 'user/Patient.rs', 'user/Observation.rs'],
) {
  const org = await newOrganization(app)
  const admin = await org.user('ADMIN')
  const provider = await org.user('PROVIDER')
  const registered = await registerApp(app, org, admin, { scopes })
  return { org, admin, provider, registered }
}

const exchange = (form: Record<string, string>) =>
  app.inject({
    method: 'POST',
    url: TOKEN_PATH,
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams(form).toString(),
  })

/** Through sign-in and consent to the app's redirect: a browser, the code, and the PKCE verifier. */
async function authorized(
  clientId: string,
  user: Awaited<ReturnType<typeof practice>>['provider'],
  scope: string,
  extra: Record<string, string> = {},
) {
  const browser = new Browser(app)
  const { verifier, challenge } = pkcePair()
  const first = await browser.request(
    'GET',
    `${AUTHORIZE_PATH}?${authorizationQuery(clientId, challenge, { scope, ...extra })}`,
  )
  expect(first.statusCode, String(first.headers.location)).toBe(200)
  const signedIn = await signIn(browser, first.body, user)
  // Consent is asked once: a later authorization of the same access goes straight back.
  const back = signedIn.statusCode === 303 ? signedIn : await consent(browser, signedIn.body, 'approve')
  expect(back.statusCode, back.body).toBe(303)
  const { code, state, url } = codeOf(back.headers.location)
  return { browser, code: code as string, state, url, verifier, challenge }
}

describe('the authorization code flow', () => {
  it('signs the user in, asks consent, and exchanges the code with PKCE for the granted scopes and an ID token', async () => {
    const { registered, provider } = await practice()
    const scope = 'openid fhirUser profile offline_access user/Patient.rs'
    const browser = new Browser(app)
    const { verifier, challenge } = pkcePair()
    const first = await browser.request(
      'GET',
      `${AUTHORIZE_PATH}?${authorizationQuery(registered.clientId, challenge, { scope, nonce: 'n-1' })}`,
    )
    expect(first.statusCode).toBe(200)
    expect(first.headers['content-type']).toMatch(/^text\/html/)
    expect(first.headers['content-security-policy']).toContain("frame-ancestors 'none'")
    expect(first.body).toContain('Chart Viewer')
    const consentPage = await signIn(browser, first.body, provider)
    expect(consentPage.statusCode).toBe(200)
    expect(consentPage.body).toContain('Read and search Patient records that you may see')
    expect(consentPage.body).toContain('Keep access when you are away')
    const back = await consent(browser, consentPage.body, 'approve')
    expect(back.statusCode).toBe(303)
    const { code, state, url } = codeOf(back.headers.location)
    expect(`${url.origin}${url.pathname}`).toBe(REDIRECT_URI)
    expect(state).toBe('state-123')
    expect(url.searchParams.get('iss')).toBe(ISSUER)

    const tokens = await exchange({
      grant_type: 'authorization_code',
      code: code as string,
      redirect_uri: REDIRECT_URI,
      code_verifier: verifier,
      client_id: registered.clientId,
    })
    expect(tokens.statusCode, tokens.body).toBe(200)
    const set = tokens.json()
    expect(set.scope.split(' ').sort()).toEqual(scope.split(' ').sort())
    expect(set.refresh_token).toEqual(expect.any(String))
    const keys = await app.inject({ url: '/realms/ehr/protocol/openid-connect/certs' })
    const { payload } = await jwtVerify(set.id_token, createLocalJWKSet(keys.json()), {
      issuer: ISSUER,
      audience: registered.clientId,
      algorithms: ['RS256'],
    })
    expect(payload).toMatchObject({ sub: provider.subject, nonce: 'n-1', email: provider.email })
    expect(decodeJwt(set.access_token).azp).toBe(registered.clientId)

    // The token reads what the scopes and the user's roles allow.
    const patientId = await createPatient(app, provider)
    const read = await app.inject({ url: `/fhir/R4/Patient/${patientId}`, headers: bearer(set.access_token) })
    expect(read.statusCode).toBe(200)
    const observations = await app.inject({ url: '/fhir/R4/Observation', headers: bearer(set.access_token) })
    expect(observations.statusCode).toBe(403)

    // A refresh keeps the scope; one asking for more is refused.
    const wider = await exchange({
      grant_type: 'refresh_token',
      refresh_token: set.refresh_token,
      client_id: registered.clientId,
      scope: 'user/Observation.rs',
    })
    expect(wider.statusCode).toBe(400)
    expect(wider.json().error).toBe('invalid_scope')
    const refreshed = await exchange({ grant_type: 'refresh_token', refresh_token: set.refresh_token })
    expect(refreshed.statusCode, refreshed.body).toBe(200)
    expect(refreshed.json().scope).toBe(set.scope)

    // The next authorization of the same access is not asked again: the grant is remembered.
    const again = await browser.request(
      'GET',
      `${AUTHORIZE_PATH}?${authorizationQuery(registered.clientId, challenge, { scope })}`,
    )
    expect(again.statusCode).toBe(303)
    expect(codeOf(again.headers.location).code).toEqual(expect.any(String))
  })

  it('refuses a code used twice, and revokes what its first exchange issued', async () => {
    const { registered, provider } = await practice()
    const { code, verifier } = await authorized(
      registered.clientId,
      provider,
      'openid offline_access user/Patient.rs',
    )
    const form = {
      grant_type: 'authorization_code',
      code,
      redirect_uri: REDIRECT_URI,
      code_verifier: verifier,
      client_id: registered.clientId,
    }
    const first = await exchange(form)
    expect(first.statusCode).toBe(200)
    const second = await exchange(form)
    expect(second.statusCode).toBe(400)
    expect(second.json().error).toBe('invalid_grant')
    // Its session is revoked: the refresh token at once, the access token as revocations reach the API.
    const refresh = await exchange({ grant_type: 'refresh_token', refresh_token: first.json().refresh_token })
    expect(refresh.statusCode).toBe(400)
    const session = await app.db
      .selectFrom('sessions')
      .select(['revoked_at', 'revoked_reason'])
      .where('id', '=', first.json().session_state)
      .executeTakeFirstOrThrow()
    expect(session.revoked_reason).toBe('CODE_REUSE')
  })

  it('refuses a wrong verifier, another redirect URI and another client', async () => {
    const { registered, provider, org, admin } = await practice()
    const other = await registerApp(app, org, admin, { scopes: ['user/Patient.rs'] })
    for (const wrong of [
      { code_verifier: pkcePair().verifier },
      { redirect_uri: 'https://app.example.test/other' },
      { client_id: other.clientId },
    ]) {
      const { code, verifier } = await authorized(registered.clientId, provider, 'user/Patient.rs')
      const refused = await exchange({
        grant_type: 'authorization_code',
        code,
        redirect_uri: REDIRECT_URI,
        code_verifier: verifier,
        client_id: registered.clientId,
        ...wrong,
      })
      expect(refused.statusCode, JSON.stringify(wrong)).toBe(400)
      expect(refused.json().error).toBe('invalid_grant')
    }
  })
})

describe('the authorization request', () => {
  it('shows a page, never redirects, for an unknown client or an unregistered redirect URI', async () => {
    const { registered } = await practice()
    const { challenge } = pkcePair()
    for (const query of [
      authorizationQuery('app-unknown', challenge),
      authorizationQuery(registered.clientId, challenge, { redirect_uri: 'https://evil.example.test/cb' }),
      authorizationQuery(registered.clientId, challenge, { redirect_uri: undefined }),
    ]) {
      const answer = await new Browser(app).request('GET', `${AUTHORIZE_PATH}?${query}`)
      expect(answer.statusCode).toBe(400)
      expect(answer.headers.location).toBeUndefined()
      expect(answer.body).toContain('Cannot continue')
    }
  })

  it('redirects errors to a registered URI with the state: no PKCE, plain PKCE, wrong aud, another response type', async () => {
    const { registered } = await practice()
    const { challenge } = pkcePair()
    const cases: [Record<string, string | undefined>, string][] = [
      [{ code_challenge: undefined, code_challenge_method: undefined }, 'invalid_request'],
      [{ code_challenge_method: 'plain', code_challenge: 'a'.repeat(43) }, 'invalid_request'],
      [{ aud: 'https://other.example.test/fhir' }, 'invalid_request'],
      [{ response_type: 'token' }, 'unsupported_response_type'],
      [{ scope: 'system/*.read' }, 'invalid_scope'],
    ]
    for (const [overrides, error] of cases) {
      const answer = await new Browser(app).request(
        'GET',
        `${AUTHORIZE_PATH}?${authorizationQuery(registered.clientId, challenge, overrides)}`,
      )
      expect(answer.statusCode, JSON.stringify(overrides)).toBe(303)
      const url = new URL(answer.headers.location as string)
      expect(`${url.origin}${url.pathname}`).toBe(REDIRECT_URI)
      expect([url.searchParams.get('error'), url.searchParams.get('state')]).toEqual([error, 'state-123'])
      expect(url.searchParams.get('code')).toBeNull()
    }
  })

  it('sends a denial back as access_denied, and audits sign-in, consent, denial and exchange', async () => {
    const { registered, provider, org } = await practice()
    const browser = new Browser(app)
    const { challenge } = pkcePair()
    const first = await browser.request(
      'GET',
      `${AUTHORIZE_PATH}?${authorizationQuery(registered.clientId, challenge)}`,
    )
    const consentPage = await signIn(browser, first.body, provider)
    const denied = await consent(browser, consentPage.body, 'deny')
    expect(denied.statusCode).toBe(303)
    expect(new URL(denied.headers.location as string).searchParams.get('error')).toBe('access_denied')
    const audit = await app.db
      .selectFrom('audit_log')
      .select(['action', 'resource_type', 'user_id'])
      .where('organization_id', '=', org.id)
      .orderBy('id')
      .execute()
    expect(audit).toEqual([
      { action: 'SIGN_IN', resource_type: 'session', user_id: provider.id },
      { action: 'DENY', resource_type: 'smart-app', user_id: provider.id },
    ])
  })

  it('refuses a consent form posted without its CSRF token, and a wrong password on the sign-in page', async () => {
    const { registered, provider } = await practice()
    const browser = new Browser(app)
    const { challenge } = pkcePair()
    const first = await browser.request(
      'GET',
      `${AUTHORIZE_PATH}?${authorizationQuery(registered.clientId, challenge)}`,
    )
    const wrong = await signIn(browser, first.body, provider, 'not-the-password')
    expect(wrong.statusCode).toBe(401)
    expect(wrong.body).toContain('Wrong email or password')
    const consentPage = await signIn(browser, wrong.body, provider)
    const { action, fields } = formOf(consentPage.body)
    const forged = await browser.request('POST', action, { ...fields, csrf: 'forged', decision: 'approve' })
    expect(forged.statusCode).toBe(403)
    expect(forged.headers.location).toBeUndefined()
    const stranger = new Browser(app)
    const withoutCookie = await stranger.request('POST', action, { ...fields, decision: 'approve' })
    expect(withoutCookie.statusCode).toBe(403)
  })
})

describe('discovery', () => {
  it('lists the authorization endpoint, the code response type and S256', async () => {
    const discovery = (await app.inject({ url: '/realms/ehr/.well-known/openid-configuration' })).json()
    expect(discovery).toMatchObject({
      authorization_endpoint: `${ISSUER}/protocol/openid-connect/auth`,
      response_types_supported: ['code'],
      code_challenge_methods_supported: ['S256'],
    })
    expect(discovery.grant_types_supported).toContain('authorization_code')
    const smart = (await app.inject({ url: '/fhir/R4/.well-known/smart-configuration' })).json()
    expect(smart.authorization_endpoint).toBe(`${ISSUER}/protocol/openid-connect/auth`)
    expect(smart.code_challenge_methods_supported).toEqual(['S256'])
    expect(smart.capabilities).toEqual(
      expect.arrayContaining([
        'launch-standalone',
        'launch-ehr',
        'client-public',
        'context-ehr-patient',
        'context-standalone-patient',
        'sso-openid-connect',
        'permission-patient',
        'permission-user',
        'permission-v2',
      ]),
    )
    expect(FHIR_BASE).toBe(`${PUBLIC_URL}/fhir/R4`)
  })
})

describe('an EHR launch', () => {
  it('opens the app in the launch context: the token carries the patient, and patient/ scopes keep to it', async () => {
    const { org, admin, provider } = await practice()
    const registered = await registerApp(app, org, admin, {
      scopes: ['launch', 'openid', 'fhirUser', 'patient/Patient.rs', 'patient/Observation.rs'],
    })
    const patientId = await createPatient(app, provider)
    const otherPatient = await createPatient(app, provider)
    const created = await app.inject({
      method: 'POST',
      url: '/api/smart-launches',
      headers: bearer(provider.token),
      payload: { patientId, appId: registered.id },
    })
    expect(created.statusCode, created.body).toBe(201)
    const { launch } = created.json().data
    const scope = 'launch openid fhirUser patient/Patient.rs'
    const { code, verifier } = await authorized(registered.clientId, provider, scope, { launch })
    const tokens = await exchange({
      grant_type: 'authorization_code',
      code,
      redirect_uri: REDIRECT_URI,
      code_verifier: verifier,
      client_id: registered.clientId,
    })
    expect(tokens.statusCode, tokens.body).toBe(200)
    expect(tokens.json()).toMatchObject({ patient: String(patientId), need_patient_banner: false })
    const token = tokens.json().access_token
    expect(
      (await app.inject({ url: `/fhir/R4/Patient/${patientId}`, headers: bearer(token) })).statusCode,
    ).toBe(200)
    expect(
      (await app.inject({ url: `/fhir/R4/Patient/${otherPatient}`, headers: bearer(token) })).statusCode,
    ).toBe(403)

    // The launch is used up: the same value opens nothing again.
    const browser = new Browser(app)
    const again = await browser.request(
      'GET',
      `${AUTHORIZE_PATH}?${authorizationQuery(registered.clientId, pkcePair().challenge, { scope, launch })}`,
    )
    expect(again.statusCode).toBe(200)
    const reused = await signIn(browser, again.body, provider)
    expect(reused.statusCode).toBe(303)
    const back = new URL(reused.headers.location as string)
    expect([back.searchParams.get('error'), back.searchParams.get('code')]).toEqual(['invalid_request', null])
  })
})
