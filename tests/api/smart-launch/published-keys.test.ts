import { randomUUID } from 'node:crypto'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { type CryptoKey, exportJWK, generateKeyPair, type JWK, SignJWT } from 'jose'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { buildTestApp } from '../../helpers/app.js'
import { stubDns } from '../../helpers/dns.js'
import { newOrganization, type TestUser } from '../../helpers/factories.js'
import {
  AUTHORIZE_PATH,
  authorizationQuery,
  Browser,
  codeOf,
  consent,
  ISSUER,
  PUBLIC_URL,
  pkcePair,
  REDIRECT_URI,
  signIn,
  TOKEN_PATH,
} from '../../helpers/smart-launch.js'
import { registeredApp } from '../smart-apps/smart-apps.js'

// A confidential SMART app that publishes its public keys at a URL (jwksUrl) and signs its token
// requests with the private key: the keys are fetched by the clients' fetcher, under the webhook
// address policy (whose checks at connect time have tests of their own, tests/unit/outbox). The
// main instance has the development allowances (http to loopback), where the key server listens;
// the strict one has the production policy, on the same database, with DNS stubbed.

const JWT_BEARER = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer'
const SCOPES = ['openid', 'fhirUser', 'user/Patient.rs']

// DNS as the strict instance sees it: nothing here resolves a real name.
const dns: Record<string, string[]> = {
  'keys.example.test': ['93.184.216.34'],
  'internal.example.test': ['10.0.0.5'],
}

interface Key {
  kid: string
  privateKey: CryptoKey
  jwk: JWK
}

async function newKey(): Promise<Key> {
  const { privateKey, publicKey } = await generateKeyPair('ES384')
  const kid = randomUUID()
  return { kid, privateKey, jwk: { ...(await exportJWK(publicKey)), kid, alg: 'ES384' } }
}

/** A JWKS server on loopback: what it publishes, and how often it was asked. */
async function startKeyServer() {
  let published: Key[] = []
  let requests = 0
  const server: Server = createServer((_request, response) => {
    requests += 1
    response.setHeader('content-type', 'application/json')
    response.end(JSON.stringify({ keys: published.map((key) => key.jwk) }))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/.well-known/jwks.json`,
    publish(keys: Key[]) {
      published = keys
    },
    get requests() {
      return requests
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}

let app: App
let strict: App
let keyServer: Awaited<ReturnType<typeof startKeyServer>>

beforeAll(async () => {
  keyServer = await startKeyServer()
  app = await buildTestApp({ PUBLIC_URL, WEBHOOK_ALLOW_HTTP: 'true', WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' })
  strict = await buildTestApp({ PUBLIC_URL }, undefined, {
    // A second instance on the same database; the first one owns and closes it.
    database: { ...app.database, close: async () => {} },
    resolveHost: stubDns(dns),
  })
})
afterAll(async () => {
  await strict?.close()
  await app?.close()
  await keyServer?.close()
})

/** An assertion as SMART describes it, for the token endpoint, signed with `key`. */
const assertion = (clientId: string, key: Key) =>
  new SignJWT({ jti: randomUUID() })
    .setProtectedHeader({ alg: 'ES384', kid: key.kid, typ: 'JWT' })
    .setIssuer(clientId)
    .setSubject(clientId)
    .setAudience(`${ISSUER}/protocol/openid-connect/token`)
    .setExpirationTime('4m')
    .sign(key.privateKey)

/** A code of the app for `user`, through sign-in and consent, and its PKCE verifier. */
async function codeFor(on: App, clientId: string, user: TestUser) {
  const browser = new Browser(on)
  const { verifier, challenge } = pkcePair()
  const query = authorizationQuery(clientId, challenge, { scope: SCOPES.join(' ') })
  const page = await browser.request('GET', `${AUTHORIZE_PATH}?${query}`)
  expect(page.statusCode, page.body).toBe(200)
  const consentPage = await signIn(browser, page.body, user)
  const back = await consent(browser, consentPage.body, 'approve')
  expect(back.statusCode, back.body).toBe(303)
  return { code: codeOf(back.headers.location).code as string, verifier }
}

const exchange = async (on: App, clientId: string, key: Key, code: string, verifier: string) =>
  on.inject({
    method: 'POST',
    url: TOKEN_PATH,
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({
      grant_type: 'authorization_code',
      code,
      redirect_uri: REDIRECT_URI,
      code_verifier: verifier,
      client_assertion_type: JWT_BEARER,
      client_assertion: await assertion(clientId, key),
    }).toString(),
  })

async function practice() {
  const org = await newOrganization(app)
  return { admin: await org.user('ADMIN'), provider: await org.user('PROVIDER') }
}

const appBody = (jwksUrl: string) => ({
  name: 'Chart Viewer',
  type: 'confidential',
  redirectUris: [REDIRECT_URI],
  scopes: SCOPES,
  jwksUrl,
})

describe('a confidential app with its keys at a URL', () => {
  it('exchanges its code with an assertion verified by the keys fetched there', async () => {
    const { admin, provider } = await practice()
    const key = await newKey()
    keyServer.publish([key])
    const created = await registeredApp(app, admin, appBody(keyServer.url))
    expect(created).toMatchObject({ hasSecret: false, jwksUrl: keyServer.url, keys: [] })
    const before = keyServer.requests

    const stranger = await newKey()
    const first = await codeFor(app, created.clientId, provider)
    const refused = await exchange(app, created.clientId, stranger, first.code, first.verifier)
    expect(refused.statusCode).toBe(401)
    expect(refused.json().error).toBe('invalid_client')
    const granted = await exchange(app, created.clientId, key, first.code, first.verifier)
    expect(granted.statusCode, granted.body).toBe(200)
    expect(granted.json()).toMatchObject({ token_type: 'Bearer', id_token: expect.any(String) })
    expect(keyServer.requests).toBeGreaterThan(before)
  })

  it('refuses a jwksUrl on a private address at registration (422), without the allowances', async () => {
    const { admin } = await practice()
    const response = await strict.inject({
      method: 'POST',
      url: '/api/smart-apps',
      headers: { authorization: `Bearer ${admin.token}` },
      payload: appBody('https://internal.example.test/jwks.json'),
    })
    expect(response.statusCode, response.body).toBe(422)
    expect(response.json().error.fields).toEqual([{ path: 'jwksUrl', message: expect.any(String) }])
  })
})
