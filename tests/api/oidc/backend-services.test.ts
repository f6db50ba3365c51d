import {
  createHmac,
  createPrivateKey,
  generateKeyPairSync,
  type KeyObject,
  randomUUID,
  sign,
} from 'node:crypto'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runUserCommand } from '../../../scripts/user/index.js'
import type { App } from '../../../src/app.js'
import { buildTestApp } from '../../helpers/app.js'
import { stubDns } from '../../helpers/dns.js'
import { bearer, newOrganization, type TestOrganization, type TestUser } from '../../helpers/factories.js'

// SMART Backend Services: clients authenticate at the token endpoint with a JWT signed by their
// private key (RFC 7523). The JWTs here are made with node:crypto alone, so that the test does not
// lean on the JOSE library the service verifies them with.

const JWT_BEARER = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer'
const TOKEN_PATH = '/realms/ehr/protocol/openid-connect/token'

// DNS as the strict instance sees it: nothing in this file resolves a real name.
const dns: Record<string, string[]> = {
  'keys.example.test': ['93.184.216.34'],
  'internal.example.test': ['10.0.0.5'],
  'metadata.example.test': ['169.254.169.254'],
}

interface TestKey {
  kid: string
  alg: 'RS384' | 'ES384'
  privateKey: KeyObject
  /** The public JWK, as a client would register or publish it. */
  jwk: Record<string, unknown>
}

function newKey(alg: 'RS384' | 'ES384', kid = `${alg.toLowerCase()}-${randomUUID().slice(0, 8)}`): TestKey {
  const { privateKey, publicKey } =
    alg === 'RS384'
      ? generateKeyPairSync('rsa', { modulusLength: 2048 })
      : generateKeyPairSync('ec', { namedCurve: 'P-384' })
  return { kid, alg, privateKey, jwk: { ...publicKey.export({ format: 'jwk' }), kid, alg, use: 'sig' } }
}

const base64url = (value: string | Buffer) => Buffer.from(value).toString('base64url')

/** A compact JWS signed with node:crypto: RS384 (PKCS #1 v1.5), ES384 (raw r||s), HS256, or none. */
function signJwt(
  header: Record<string, unknown>,
  claims: Record<string, unknown>,
  key?: KeyObject | Buffer,
): string {
  const input = `${base64url(JSON.stringify(header))}.${base64url(JSON.stringify(claims))}`
  let signature = Buffer.alloc(0)
  if (header.alg === 'RS384') signature = sign('sha384', Buffer.from(input), key as KeyObject)
  if (header.alg === 'ES384') {
    signature = sign('sha384', Buffer.from(input), { key: key as KeyObject, dsaEncoding: 'ieee-p1363' })
  }
  if (header.alg === 'HS256')
    signature = createHmac('sha256', key as Buffer)
      .update(input)
      .digest()
  return `${input}.${base64url(signature)}`
}

let audience: string

/** A client assertion as SMART Backend Services describes it; `claims` and `header` override. */
function assertion(
  clientId: string,
  key: TestKey,
  options: { claims?: Record<string, unknown>; header?: Record<string, unknown>; signWith?: KeyObject } = {},
): string {
  const now = Math.floor(Date.now() / 1000)
  const claims = {
    iss: clientId,
    sub: clientId,
    aud: audience,
    exp: now + 240,
    jti: randomUUID(),
    ...options.claims,
  }
  const header = { alg: key.alg, typ: 'JWT', kid: key.kid, ...options.header }
  return signJwt(header, claims, options.signWith ?? key.privateKey)
}

/** The JWKS server a client publishes its keys at, on loopback. */
interface KeyServer {
  url: string
  publish(keys: TestKey[]): void
  fail(status: number): void
  readonly requests: number
  close(): Promise<void>
}

async function startKeyServer(): Promise<KeyServer> {
  let published: TestKey[] = []
  let failure: number | undefined
  let requests = 0
  const server: Server = createServer((_request, response) => {
    requests += 1
    if (failure) {
      response.statusCode = failure
      response.end('{}')
      return
    }
    response.setHeader('content-type', 'application/json')
    response.end(JSON.stringify({ keys: published.map((key) => key.jwk) }))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/.well-known/jwks.json`,
    publish(keys) {
      published = keys
      failure = undefined
    },
    fail(status) {
      failure = status
    },
    get requests() {
      return requests
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}

// The main instance may fetch keys from loopback over http (the development allowances, as a
// developer's machine would have them); the strict one has the production policy and stubbed DNS.
let app: App
let strict: App
const logLines: string[] = []
let keyServer: KeyServer

beforeAll(async () => {
  keyServer = await startKeyServer()
  app = await buildTestApp(
    { WEBHOOK_ALLOW_HTTP: 'true', WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true', LOG_LEVEL: 'warn' },
    undefined,
    { logStream: { write: (line: string) => logLines.push(line) } },
  )
  strict = await buildTestApp({}, undefined, {
    // A second instance on the same database; the first one owns and closes it.
    database: { ...app.database, close: async () => {} },
    resolveHost: stubDns(dns),
  })
  const discovery = await app.inject({ url: '/realms/ehr/.well-known/openid-configuration' })
  audience = discovery.json().token_endpoint
})
afterAll(async () => {
  await strict?.close()
  await app?.close()
  await keyServer?.close()
})

const tokenRequest = (fields: Record<string, string>, on: App = app, headers: Record<string, string> = {}) =>
  on.inject({
    method: 'POST',
    url: TOKEN_PATH,
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    payload: new URLSearchParams(fields).toString(),
  })

const withAssertion = (jwt: string, scope = 'system/*.read', extra: Record<string, string> = {}) =>
  tokenRequest({
    grant_type: 'client_credentials',
    client_assertion_type: JWT_BEARER,
    client_assertion: jwt,
    scope,
    ...extra,
  })

interface RegisteredClient {
  id: number
  clientId: string
  hasSecret: boolean
  jwksUrl: string | null
  keys: { kid: string | null; alg: string }[]
  secret?: string
}

const call = (user: TestUser, method: 'GET' | 'POST' | 'PUT', url: string, payload?: object, on = app) =>
  on.inject({ method, url, headers: bearer(user.token), ...(payload ? { payload } : {}) })

const mergePatch = (user: TestUser, id: number, patch: object) =>
  app.inject({
    method: 'PATCH',
    url: `/api/clients/${id}`,
    headers: { ...bearer(user.token), 'content-type': 'application/merge-patch+json' },
    payload: JSON.stringify(patch),
  })

async function register(admin: TestUser, body: object, on = app): Promise<RegisteredClient> {
  const response = await call(admin, 'POST', '/api/clients', { roles: ['PROVIDER'], ...body }, on)
  expect(response.statusCode, response.body).toBe(201)
  return response.json().data
}

async function adminOfNewOrganization(): Promise<{ org: TestOrganization; admin: TestUser }> {
  const org = await newOrganization(app)
  return { org, admin: await org.user('ADMIN') }
}

const expectInvalidClient = (response: { statusCode: number; json(): { error: string } }) => {
  expect(response.statusCode).toBe(401)
  expect(response.json().error).toBe('invalid_client')
  expect(response.json()).not.toHaveProperty('access_token')
}

const accessTokenClaims = (token: string) =>
  JSON.parse(Buffer.from(token.split('.')[1] as string, 'base64url').toString('utf8'))

describe('discovery', () => {
  it('advertises private_key_jwt with RS384 and ES384, and the SMART asymmetric capability', async () => {
    const smart = await app.inject({ url: '/fhir/R4/.well-known/smart-configuration' })
    expect(smart.statusCode).toBe(200)
    expect(smart.json()).toMatchObject({
      token_endpoint: audience,
      token_endpoint_auth_methods_supported: expect.arrayContaining([
        'private_key_jwt',
        'client_secret_basic',
      ]),
      token_endpoint_auth_signing_alg_values_supported: ['RS384', 'ES384'],
      capabilities: expect.arrayContaining([
        'client-confidential-asymmetric',
        'client-confidential-symmetric',
      ]),
    })
    const openid = await app.inject({ url: '/realms/ehr/.well-known/openid-configuration' })
    expect(openid.json()).toMatchObject({
      token_endpoint_auth_methods_supported: expect.arrayContaining(['private_key_jwt']),
      token_endpoint_auth_signing_alg_values_supported: ['RS384', 'ES384'],
    })
  })
})

describe('client_credentials with a client assertion (stored JWKS)', () => {
  let org: TestOrganization
  let admin: TestUser
  const rsa = newKey('RS384')
  const ec = newKey('ES384')
  let client: RegisteredClient

  beforeAll(async () => {
    ;({ org, admin } = await adminOfNewOrganization())
    client = await register(admin, { name: 'Population export', jwks: { keys: [rsa.jwk, ec.jwk] } })
  })

  it('registers the keys: the client has no secret, and shows key ids and algorithms only', async () => {
    expect(client).toMatchObject({
      hasSecret: false,
      jwksUrl: null,
      keys: [
        { kid: rsa.kid, alg: 'RS384' },
        { kid: ec.kid, alg: 'ES384' },
      ],
    })
    expect(client.secret).toBeUndefined()
    const read = await call(admin, 'GET', `/api/clients/${client.id}`)
    expect(read.statusCode).toBe(200)
    expect(read.body).not.toContain(String(rsa.jwk.n))
    expect(read.body).not.toContain('"jwks"')
  })

  it('returns 200 with a token for a valid RS384 assertion, carrying the system scopes, that reads FHIR', async () => {
    const response = await withAssertion(assertion(client.clientId, rsa), 'system/*.read')
    expect(response.statusCode, response.body).toBe(200)
    expect(response.headers['cache-control']).toBe('no-store')
    const set = response.json()
    expect(set).toMatchObject({
      token_type: 'Bearer',
      scope: 'openid profile email system/*.read',
      refresh_expires_in: 0,
    })
    expect(set.refresh_token).toBeUndefined()
    expect(accessTokenClaims(set.access_token)).toMatchObject({
      azp: client.clientId,
      scope: 'openid profile email system/*.read',
      realm_access: { roles: ['PROVIDER'] },
      groups: [org.groupPath],
    })
    const patients = await app.inject({ url: '/fhir/R4/Patient', headers: bearer(set.access_token) })
    expect(patients.statusCode, patients.body).toBe(200)
    expect(patients.json().resourceType).toBe('Bundle')
  })

  it('returns 200 for a valid ES384 assertion with v1 and v2 scopes; the scopes narrow FHIR', async () => {
    const response = await withAssertion(
      assertion(client.clientId, ec),
      'system/Patient.read system/Observation.rs',
    )
    expect(response.statusCode, response.body).toBe(200)
    const { access_token: token, scope } = response.json()
    expect(scope).toBe('openid profile email system/Patient.read system/Observation.rs')
    expect((await app.inject({ url: '/fhir/R4/Patient', headers: bearer(token) })).statusCode).toBe(200)
    expect((await app.inject({ url: '/fhir/R4/Encounter', headers: bearer(token) })).statusCode).toBe(403)
  })

  it('keeps a token with system scopes to the FHIR API: 403 on the /api routes its roles open', async () => {
    const scoped = await withAssertion(assertion(client.clientId, rsa), 'system/Patient.rs')
    expect(scoped.statusCode, scoped.body).toBe(200)
    const token = scoped.json().access_token
    const listed = await app.inject({ url: '/api/patients', headers: bearer(token) })
    expect(listed.statusCode).toBe(403)
    expect(listed.json().error.code).toBe('AUTH_003')
    expect(listed.json().error.details).toContain('FHIR API')
    expect((await app.inject({ url: '/api/auth/me', headers: bearer(token) })).statusCode).toBe(200)
    expect((await app.inject({ url: '/fhir/R4/Patient', headers: bearer(token) })).statusCode).toBe(200)

    const unscoped = await withAssertion(assertion(client.clientId, rsa), '')
    const plain = await app.inject({ url: '/api/patients', headers: bearer(unscoped.json().access_token) })
    expect(plain.statusCode).toBe(200)
  })

  it('accepts an assertion without kid, trying each key of its algorithm, and a matching client_id', async () => {
    const jwt = assertion(client.clientId, ec, { header: { kid: undefined } })
    const response = await withAssertion(jwt, 'system/Patient.rs', { client_id: client.clientId })
    expect(response.statusCode, response.body).toBe(200)
  })

  it('refuses a scope that is not a system scope (invalid_scope), as for a secret', async () => {
    const response = await withAssertion(assertion(client.clientId, rsa), 'patient/*.read')
    expect(response.statusCode).toBe(400)
    expect(response.json().error).toBe('invalid_scope')
  })

  it('grants only the supported scopes the roles allow, drops the rest, and is invalid_scope when none remains', async () => {
    // PROVIDER may register and change patients but not delete them (ADMIN alone does).
    for (const scope of ['system/Patient.cruds', 'system/Patient.write', 'system/Claim.rs']) {
      const refused = await withAssertion(assertion(client.clientId, rsa), scope)
      expect(refused.statusCode, scope).toBe(400)
      expect(refused.json().error, scope).toBe('invalid_scope')
    }
    const partly = await withAssertion(
      assertion(client.clientId, rsa),
      'system/Patient.rs system/Patient.cruds system/Observation.rs?category=laboratory system/Patient.cru',
    )
    expect(partly.statusCode, partly.body).toBe(200)
    const granted =
      'openid profile email system/Patient.rs system/Observation.rs?category=laboratory system/Patient.cru'
    expect(partly.json().scope).toBe(granted)
    expect(accessTokenClaims(partly.json().access_token).scope).toBe(granted)

    // Every type by name with what the roles allow there: writes only where the type takes them.
    const writes = await withAssertion(assertion(client.clientId, rsa), 'system/*.cud')
    expect(writes.statusCode, writes.body).toBe(200)
    expect(writes.json().scope).toBe(
      'openid profile email system/Patient.cu system/DocumentReference.cud system/Appointment.cu system/Encounter.cu system/Condition.cud system/AllergyIntolerance.cud system/MedicationStatement.cud system/MedicationRequest.cud system/Observation.cud',
    )
    const everything = await withAssertion(assertion(client.clientId, rsa), 'system/*.*')
    expect(everything.statusCode, everything.body).toBe(200)
    const v1 = String(everything.json().scope).split(' ').slice(3)
    expect(v1).toContain('system/Patient.read')
    expect(v1).toContain('system/Observation.*')
    // Every interaction where the roles allow them all: the clinical records a provider writes.
    expect(v1).toContain('system/Condition.*')
    expect(v1.every((scope) => /^system\/[A-Za-z]+\.(read|\*)$/.test(scope))).toBe(true)

    const billing = await register(admin, {
      name: 'Billing export',
      roles: ['BILLING'],
      jwks: { keys: [rsa.jwk] },
    })
    const vitals = await withAssertion(assertion(billing.clientId, rsa), 'system/Observation.rs')
    expect(vitals.statusCode).toBe(400)
    expect(vitals.json().error).toBe('invalid_scope')
    const readable = await withAssertion(assertion(billing.clientId, rsa), 'system/*.rs')
    expect(readable.statusCode, readable.body).toBe(200)
    // Each type by name with what BILLING may do there: not Observation at all, Patient read only
    // (BILLING finds patients by the REST search, not the full list a FHIR search is).
    const billingScopes = String(readable.json().scope).split(' ').slice(3)
    expect(billingScopes).toContain('system/Patient.r')
    expect(billingScopes.some((scope) => scope.startsWith('system/Observation.'))).toBe(false)
    const types = billingScopes
      .map((scope) => /^system\/([A-Za-z]+)\.rs$/.exec(scope)?.[1])
      .filter((type) => type !== undefined)
    expect(types.length).toBeGreaterThan(0)
    const billingToken = readable.json().access_token
    for (const type of types) {
      const search = await app.inject({ url: `/fhir/R4/${type}`, headers: bearer(billingToken) })
      expect(search.statusCode, type).toBe(200)
    }
  })

  it('accepts the issuer URL as the assertion’s aud, as it accepts the token endpoint’s', async () => {
    const issuer = audience.replace(/\/protocol\/openid-connect\/token$/, '')
    const response = await withAssertion(assertion(client.clientId, rsa, { claims: { aud: issuer } }))
    expect(response.statusCode, response.body).toBe(200)
    const listed = await withAssertion(
      assertion(client.clientId, rsa, { claims: { aud: ['urn:other', issuer] } }),
    )
    expect(listed.statusCode, listed.body).toBe(200)
  })

  const otherRsa = newKey('RS384')
  const now = () => Math.floor(Date.now() / 1000)
  it.each([
    ['a wrong signature', () => assertion(client.clientId, rsa, { signWith: otherRsa.privateKey })],
    ['an unknown kid', () => assertion(client.clientId, otherRsa)],
    [
      'a wrong aud',
      () => assertion(client.clientId, rsa, { claims: { aud: 'https://elsewhere.example/token' } }),
    ],
    [
      'another endpoint of the realm as aud',
      () => assertion(client.clientId, rsa, { claims: { aud: audience.replace(/token$/, 'auth') } }),
    ],
    ['an expired exp', () => assertion(client.clientId, rsa, { claims: { exp: now() - 120 } })],
    [
      'an exp more than 5 minutes ahead',
      () => assertion(client.clientId, ec, { claims: { exp: now() + 900 } }),
    ],
    ['no exp', () => assertion(client.clientId, rsa, { claims: { exp: undefined } })],
    ['no jti', () => assertion(client.clientId, rsa, { claims: { jti: undefined } })],
    ['an empty jti', () => assertion(client.clientId, ec, { claims: { jti: '' } })],
    [
      'a sub that is not the client',
      () => assertion(client.clientId, rsa, { claims: { sub: 'someone-else' } }),
    ],
    [
      'alg none',
      () => {
        const claims = {
          iss: client.clientId,
          sub: client.clientId,
          aud: audience,
          exp: now() + 60,
          jti: randomUUID(),
        }
        return signJwt({ alg: 'none', typ: 'JWT' }, claims)
      },
    ],
    [
      'HS256 keyed with the public key',
      () => {
        const claims = {
          iss: client.clientId,
          sub: client.clientId,
          aud: audience,
          exp: now() + 60,
          jti: randomUUID(),
        }
        return signJwt(
          { alg: 'HS256', typ: 'JWT', kid: rsa.kid },
          claims,
          Buffer.from(JSON.stringify(rsa.jwk)),
        )
      },
    ],
    [
      'RS256 with a registered RSA key',
      () => {
        const claims = {
          iss: client.clientId,
          sub: client.clientId,
          aud: audience,
          exp: now() + 60,
          jti: randomUUID(),
        }
        const input = `${base64url(JSON.stringify({ alg: 'RS256', kid: rsa.kid }))}.${base64url(JSON.stringify(claims))}`
        return `${input}.${base64url(sign('sha256', Buffer.from(input), rsa.privateKey))}`
      },
    ],
    ['an unknown client', () => assertion(`unknown-${randomUUID().slice(0, 8)}`, rsa)],
    ['garbage', () => 'not.a.jwt'],
  ])('returns 401 invalid_client for %s', async (_case, make) => {
    expectInvalidClient(await withAssertion(make()))
  })

  it('names the failed claim once the signature has verified, and nothing before', async () => {
    const expired = await withAssertion(assertion(client.clientId, rsa, { claims: { exp: now() - 120 } }))
    expect(expired.json().error_description).toMatch(/expired/)
    const forged = await withAssertion(
      assertion(client.clientId, rsa, { claims: { exp: now() - 120 }, signWith: otherRsa.privateKey }),
    )
    expect(forged.json().error_description).toBe('Invalid client or client credentials')
  })

  it('refuses the same jti twice (401), however the assertion is otherwise made', async () => {
    const jti = randomUUID()
    const first = assertion(client.clientId, rsa, { claims: { jti } })
    expect((await withAssertion(first)).statusCode).toBe(200)
    const replayed = await withAssertion(first)
    expectInvalidClient(replayed)
    expect(replayed.json().error_description).toMatch(/jti/)
    expectInvalidClient(
      await withAssertion(assertion(client.clientId, ec, { claims: { jti, exp: now() + 60 } })),
    )
    const row = await app.db
      .selectFrom('assertion_jtis')
      .selectAll()
      .where('client_id', '=', client.clientId)
      .where('jti', '=', jti)
      .executeTakeFirstOrThrow()
    expect(row.expires_at.getTime()).toBeGreaterThan(Date.now())
  })

  it('lets exactly one of several simultaneous uses of an assertion through', async () => {
    const jwt = assertion(client.clientId, ec)
    const answers = await Promise.all(Array.from({ length: 5 }, () => withAssertion(jwt)))
    expect(answers.map((answer) => answer.statusCode).sort()).toEqual([200, 401, 401, 401, 401])
  })

  it('lets another client use the same jti, and a jti again once its record has expired', async () => {
    const jti = randomUUID()
    const second = await register(admin, { name: 'Second export', jwks: { keys: [rsa.jwk] } })
    expect((await withAssertion(assertion(client.clientId, rsa, { claims: { jti } }))).statusCode).toBe(200)
    expect((await withAssertion(assertion(second.clientId, rsa, { claims: { jti } }))).statusCode).toBe(200)
    await app.db
      .updateTable('assertion_jtis')
      .set({ expires_at: new Date(Date.now() - 1000) })
      .where('client_id', '=', client.clientId)
      .where('jti', '=', jti)
      .execute()
    expect((await withAssertion(assertion(client.clientId, rsa, { claims: { jti } }))).statusCode).toBe(200)
  })

  it('purges expired jtis as new ones are recorded', async () => {
    const stale = Array.from({ length: 5 }, () => ({
      client_id: client.clientId,
      jti: `stale-${randomUUID()}`,
      expires_at: new Date(Date.now() - 60_000),
    }))
    await app.db.insertInto('assertion_jtis').values(stale).execute()
    expect((await withAssertion(assertion(client.clientId, ec))).statusCode).toBe(200)
    const left = await app.db
      .selectFrom('assertion_jtis')
      .select('jti')
      .where(
        'jti',
        'in',
        stale.map((row) => row.jti),
      )
      .execute()
    expect(left).toEqual([])
  })

  it('answers invalid_request for a wrong assertion type or two authentication methods', async () => {
    const wrongType = await tokenRequest({
      grant_type: 'client_credentials',
      client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:saml2-bearer',
      client_assertion: assertion(client.clientId, rsa),
    })
    expect(wrongType.statusCode).toBe(400)
    expect(wrongType.json().error).toBe('invalid_request')
    const withSecret = await withAssertion(assertion(client.clientId, rsa), 'system/*.read', {
      client_id: client.clientId,
      client_secret: 'anything',
    })
    expect(withSecret.statusCode).toBe(400)
    expect(withSecret.json().error).toBe('invalid_request')
    const withBasic = await tokenRequest(
      {
        grant_type: 'client_credentials',
        client_assertion_type: JWT_BEARER,
        client_assertion: assertion(client.clientId, rsa),
      },
      app,
      { authorization: `Basic ${Buffer.from(`${client.clientId}:x`).toString('base64')}` },
    )
    expect(withBasic.statusCode).toBe(400)
    expect(withBasic.json().error).toBe('invalid_request')
    expectInvalidClient(
      await withAssertion(assertion(client.clientId, rsa), 'system/*.read', { client_id: 'someone-else' }),
    )
  })

  it('refuses a deactivated client (401) and accepts it again once reactivated', async () => {
    const paused = await register(admin, { name: 'Paused export', jwks: { keys: [ec.jwk] } })
    expect((await call(admin, 'POST', `/api/clients/${paused.id}/deactivate`)).statusCode).toBe(200)
    expectInvalidClient(await withAssertion(assertion(paused.clientId, ec)))
    expect((await call(admin, 'POST', `/api/clients/${paused.id}/reactivate`)).statusCode).toBe(200)
    expect((await withAssertion(assertion(paused.clientId, ec))).statusCode).toBe(200)
  })

  it('writes nothing of the assertions or keys to the log', async () => {
    expect(logLines.join('\n')).not.toContain(String(rsa.jwk.n))
    expect(logLines.join('\n')).not.toMatch(/eyJ[A-Za-z0-9_-]{10,}\./)
  })
})

describe('keys changed with PUT, PATCH and rotate-secret', () => {
  it('PATCH replaces the key set: the old key stops working and the new one works', async () => {
    const { admin } = await adminOfNewOrganization()
    const before = newKey('RS384')
    const after = newKey('ES384')
    const client = await register(admin, { name: 'Rekeyed', jwks: { keys: [before.jwk] } })
    expect((await withAssertion(assertion(client.clientId, before))).statusCode).toBe(200)
    const patched = await mergePatch(admin, client.id, { jwks: { keys: [after.jwk] } })
    expect(patched.statusCode, patched.body).toBe(200)
    expect(patched.json().data.keys).toEqual([{ kid: after.kid, alg: 'ES384' }])
    expectInvalidClient(await withAssertion(assertion(client.clientId, before)))
    expect((await withAssertion(assertion(client.clientId, after))).statusCode).toBe(200)
    // A patch of another member keeps the keys.
    const renamed = await mergePatch(admin, client.id, { name: 'Rekeyed export' })
    expect(renamed.json().data).toMatchObject({ name: 'Rekeyed export', keys: [{ kid: after.kid }] })
  })

  it('a client without a secret keeps some keys (422); rotate-secret gives it a secret, and then both work', async () => {
    const { admin } = await adminOfNewOrganization()
    const key = newKey('ES384')
    const client = await register(admin, { name: 'Keys only', jwks: { keys: [key.jwk] } })
    const removed = await mergePatch(admin, client.id, { jwks: null })
    expect(removed.statusCode).toBe(422)
    const put = await call(admin, 'PUT', `/api/clients/${client.id}`, {
      name: 'Keys only',
      roles: ['PROVIDER'],
    })
    expect(put.statusCode).toBe(422)

    const rotated = await call(admin, 'POST', `/api/clients/${client.id}/rotate-secret`)
    expect(rotated.statusCode).toBe(200)
    const { secret, hasSecret, previousSecretExpiresAt } = rotated.json().data
    expect(hasSecret).toBe(true)
    expect(previousSecretExpiresAt).toBeNull()
    const basic = { authorization: `Basic ${Buffer.from(`${client.clientId}:${secret}`).toString('base64')}` }
    expect((await tokenRequest({ grant_type: 'client_credentials' }, app, basic)).statusCode).toBe(200)
    expect((await withAssertion(assertion(client.clientId, key))).statusCode).toBe(200)

    const secretOnly = await mergePatch(admin, client.id, { jwks: null })
    expect(secretOnly.statusCode, secretOnly.body).toBe(200)
    expect(secretOnly.json().data).toMatchObject({ hasSecret: true, keys: [], jwksUrl: null })
    expectInvalidClient(await withAssertion(assertion(client.clientId, key)))
  })

  it('a client with a secret gets keys with PUT and then authenticates either way', async () => {
    const { admin } = await adminOfNewOrganization()
    const created = await call(admin, 'POST', '/api/clients', { name: 'Both ways', roles: ['PROVIDER'] })
    const { id, clientId, secret } = created.json().data
    expect(created.json().data).toMatchObject({ hasSecret: true, keys: [], jwksUrl: null })
    const key = newKey('RS384')
    const put = await call(admin, 'PUT', `/api/clients/${id}`, {
      name: 'Both ways',
      roles: ['PROVIDER'],
      jwks: { keys: [key.jwk] },
    })
    expect(put.statusCode, put.body).toBe(200)
    expect(put.json().data).toMatchObject({ hasSecret: true, keys: [{ kid: key.kid, alg: 'RS384' }] })
    expect((await withAssertion(assertion(clientId, key))).statusCode).toBe(200)
    const viaSecret = await tokenRequest({
      grant_type: 'client_credentials',
      client_id: clientId,
      client_secret: secret,
    })
    expect(viaSecret.statusCode).toBe(200)
  })
})

describe('registering keys: what is refused (422)', () => {
  let admin: TestUser
  beforeAll(async () => {
    ;({ admin } = await adminOfNewOrganization())
  })

  const privateJwk = (alg: 'RS384' | 'ES384') => {
    const key = newKey(alg)
    return {
      ...createPrivateKey(key.privateKey.export({ format: 'pem', type: 'pkcs8' })).export({ format: 'jwk' }),
      kid: key.kid,
    }
  }
  const rsaBits = (bits: number) => ({
    ...generateKeyPairSync('rsa', { modulusLength: bits }).publicKey.export({ format: 'jwk' }),
    kid: 'small',
  })

  it.each([
    ['an RSA private key (d, p, q, dp, dq, qi)', () => ({ jwks: { keys: [privateJwk('RS384')] } })],
    ['an EC private key (d)', () => ({ jwks: { keys: [privateJwk('ES384')] } })],
    [
      'a symmetric key (k)',
      () => ({ jwks: { keys: [{ kty: 'oct', k: base64url('secret'), kid: 'hmac' }] } }),
    ],
    [
      'a public key with a private member added',
      () => ({ jwks: { keys: [{ ...newKey('RS384').jwk, d: 'AQAB' }] } }),
    ],
    ['an RSA key under 2048 bits', () => ({ jwks: { keys: [rsaBits(1024)] } })],
    [
      'an EC key on P-256',
      () => ({
        jwks: {
          keys: [
            { ...generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({ format: 'jwk' }) },
          ],
        },
      }),
    ],
    [
      'a key whose alg does not fit it',
      () => ({ jwks: { keys: [{ ...newKey('RS384').jwk, alg: 'ES384' }] } }),
    ],
    [
      'the same kid twice',
      () => {
        const key = newKey('RS384')
        return { jwks: { keys: [key.jwk, { ...newKey('RS384').jwk, kid: key.kid }] } }
      },
    ],
    ['an empty key set', () => ({ jwks: { keys: [] } })],
    [
      'both jwks and jwksUrl',
      () => ({ jwks: { keys: [newKey('ES384').jwk] }, jwksUrl: 'https://keys.example.test/jwks.json' }),
    ],
  ])('POST returns 422 for %s, creating nothing', async (_case, body) => {
    const before = (await call(admin, 'GET', '/api/clients')).json().data.totalElements
    const response = await call(admin, 'POST', '/api/clients', {
      name: 'Refused',
      roles: ['PROVIDER'],
      ...body(),
    })
    expect(response.statusCode, response.body).toBe(422)
    expect(response.json()).toMatchObject({
      success: false,
      error: { code: expect.stringMatching(/^VAL_00[12]$/) },
    })
    expect((await call(admin, 'GET', '/api/clients')).json().data.totalElements).toBe(before)
  })

  it('PUT and PATCH return 422 for a private key, changing nothing', async () => {
    const key = newKey('ES384')
    const client = await register(admin, { name: 'Kept', jwks: { keys: [key.jwk] } })
    const put = await call(admin, 'PUT', `/api/clients/${client.id}`, {
      name: 'Kept',
      roles: ['PROVIDER'],
      jwks: { keys: [privateJwk('ES384')] },
    })
    expect(put.statusCode).toBe(422)
    const patch = await mergePatch(admin, client.id, { jwks: { keys: [privateJwk('RS384')] } })
    expect(patch.statusCode).toBe(422)
    const read = await call(admin, 'GET', `/api/clients/${client.id}`)
    expect(read.json().data.keys).toEqual([{ kid: key.kid, alg: 'ES384' }])
  })

  it.each([
    ['a host on a private address', 'https://internal.example.test/jwks.json', /private|internal/],
    ['a metadata address', 'https://metadata.example.test/jwks.json', /private|internal/],
    ['a loopback address', 'https://127.0.0.1/jwks.json', /private|internal/],
    ['localhost', 'https://localhost/jwks.json', /this machine/],
    ['plain http', 'http://keys.example.test/jwks.json', /https/],
    ['a host that does not resolve', 'https://nowhere.example.test/jwks.json', /resolve/],
  ])(
    'refuses a jwksUrl to %s at registration (422), without the development allowances',
    async (_case, url, reason) => {
      const response = await call(
        admin,
        'POST',
        '/api/clients',
        { name: 'Probe', roles: ['PROVIDER'], jwksUrl: url },
        strict,
      )
      expect(response.statusCode, response.body).toBe(422)
      expect(response.json().error.details).toMatch(reason)
    },
  )

  it('accepts an https jwksUrl on a public address without fetching it', async () => {
    const client = await register(
      admin,
      { name: 'Public keys', jwksUrl: 'https://keys.example.test/jwks.json' },
      strict,
    )
    expect(client).toMatchObject({
      hasSecret: false,
      jwksUrl: 'https://keys.example.test/jwks.json',
      keys: [],
    })
  })
})

describe('client_credentials with keys published at a JWKS URL', () => {
  it('fetches the keys, caches them, and picks up a rotated key at the URL', async () => {
    const { admin } = await adminOfNewOrganization()
    const first = newKey('RS384')
    const second = newKey('ES384')
    keyServer.publish([first])
    const client = await register(admin, { name: 'Published keys', jwksUrl: keyServer.url })
    expect(client).toMatchObject({ hasSecret: false, jwksUrl: keyServer.url, keys: [] })
    const start = keyServer.requests

    const granted = await withAssertion(assertion(client.clientId, first))
    expect(granted.statusCode, granted.body).toBe(200)
    expect(
      (await app.inject({ url: '/fhir/R4/Patient', headers: bearer(granted.json().access_token) }))
        .statusCode,
    ).toBe(200)
    expect(keyServer.requests).toBe(start + 1)
    expect((await withAssertion(assertion(client.clientId, first))).statusCode).toBe(200)
    expect(keyServer.requests).toBe(start + 1)

    // The client rotates: a new kid appears at the URL and is fetched on first sight.
    keyServer.publish([first, second])
    expect((await withAssertion(assertion(client.clientId, second))).statusCode).toBe(200)
    expect(keyServer.requests).toBe(start + 2)

    // Another unknown kid at once: no second fetch so soon, and refused.
    const unknown = newKey('RS384')
    expectInvalidClient(await withAssertion(assertion(client.clientId, unknown)))
    expect(keyServer.requests).toBe(start + 2)
    expect((await withAssertion(assertion(client.clientId, second))).statusCode).toBe(200)
  })

  it('refuses the client (401) when its URL does not answer with a key set, logging only the client id', async () => {
    const { admin } = await adminOfNewOrganization()
    const key = newKey('ES384')
    const failing = await startKeyServer()
    try {
      failing.fail(500)
      const client = await register(admin, { name: 'Broken keys', jwksUrl: failing.url })
      const jwt = assertion(client.clientId, key)
      logLines.length = 0
      expectInvalidClient(await withAssertion(jwt))
      expect(failing.requests).toBe(1)
      const warnings = logLines.filter((line) => line.includes('JWKS'))
      expect(warnings).toHaveLength(1)
      expect(JSON.parse(warnings[0] as string)).toMatchObject({ clientId: client.clientId })
      expect(logLines.join('\n')).not.toContain(jwt.split('.')[1])
      expect(logLines.join('\n')).not.toContain(failing.url)
    } finally {
      await failing.close()
    }
  })

  it('refuses a published key set that carries private key material', async () => {
    const { admin } = await adminOfNewOrganization()
    const key = newKey('RS384')
    const leaky = await startKeyServer()
    try {
      leaky.publish([
        { ...key, jwk: { ...key.privateKey.export({ format: 'jwk' }), kid: key.kid, alg: 'RS384' } },
      ])
      const client = await register(admin, { name: 'Leaky keys', jwksUrl: leaky.url })
      expectInvalidClient(await withAssertion(assertion(client.clientId, key)))
    } finally {
      await leaky.close()
    }
  })
})

describe('npm run user -- client create with keys', () => {
  let directory: string
  beforeAll(async () => {
    directory = await mkdtemp(path.join(tmpdir(), 'jwks-'))
  })
  afterAll(async () => {
    await rm(directory, { recursive: true, force: true })
  })

  async function run(...argv: string[]) {
    const lines: string[] = []
    const code = await runUserCommand(app.db, argv, (line) => lines.push(line))
    return { code, output: lines.join('\n') }
  }

  it('registers a client with --jwks-file that then authenticates with its key, and prints no secret', async () => {
    const org = await newOrganization(app)
    const key = newKey('ES384')
    const file = path.join(directory, 'jwks.json')
    await writeFile(file, JSON.stringify({ keys: [key.jwk] }))
    const clientId = `cli-keys-${randomUUID().slice(0, 8)}`
    const args = [
      'client',
      'create',
      '--org',
      org.groupPath,
      '--client-id',
      clientId,
      '--name',
      'CLI export',
      '--roles',
      'PROVIDER',
    ]
    const result = await run(...args, '--jwks-file', file)
    expect(result.code, result.output).toBe(0)
    expect(result.output).toContain(`Created client ${clientId}`)
    expect(result.output).not.toMatch(/Client secret/)
    expect((await withAssertion(assertion(clientId, key))).statusCode).toBe(200)
  })

  it('refuses a private key in --jwks-file (1), both options (2), and keeps printing a secret without them', async () => {
    const org = await newOrganization(app)
    const file = path.join(directory, 'private.json')
    const key = newKey('RS384')
    await writeFile(
      file,
      JSON.stringify({ keys: [{ ...key.privateKey.export({ format: 'jwk' }), kid: key.kid }] }),
    )
    const args = (id: string) => [
      'client',
      'create',
      '--org',
      org.groupPath,
      '--client-id',
      id,
      '--name',
      'CLI',
      '--roles',
      'PROVIDER',
    ]
    const refused = await run(...args(`cli-private-${randomUUID().slice(0, 8)}`), '--jwks-file', file)
    expect(refused.code).toBe(1)
    expect(refused.output).toMatch(/private key material/)
    const both = await run(
      ...args(`cli-both-${randomUUID().slice(0, 8)}`),
      '--jwks-file',
      file,
      '--jwks-url',
      'https://keys.example.test/jwks.json',
    )
    expect(both.code).toBe(2)
    const plain = await run(...args(`cli-plain-${randomUUID().slice(0, 8)}`))
    expect(plain.code).toBe(0)
    expect(plain.output).toMatch(/Client secret \(shown only now\): \S{43}/)
  })

  it('refuses a --jwks-url to loopback under the default policy (1)', async () => {
    const org = await newOrganization(app)
    const result = await run(
      'client',
      'create',
      '--org',
      org.groupPath,
      '--client-id',
      `cli-url-${randomUUID().slice(0, 8)}`,
      '--name',
      'CLI',
      '--roles',
      'PROVIDER',
      '--jwks-url',
      'https://127.0.0.1/jwks.json',
    )
    expect(result.code).toBe(1)
    expect(result.output).toMatch(/jwksUrl .*(private|internal)/)
  })
})
