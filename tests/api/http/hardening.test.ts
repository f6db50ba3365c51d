import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { buildTestApp } from '../../helpers/app.js'
import { bearer, newOrganization, patientBody } from '../../helpers/factories.js'

// Names no code or library would print by chance: if one shows up in the log, a request leaked it.
const FIRST = 'Quillfeatheria'
const LAST = 'Zwyxbrandtova'
const EMAIL = 'quillfeatheria.zwyx@example.test'
const BIRTH_DATE = '1931-02-17'

let app: App
let corsApp: App
const PORTAL = 'https://portal.example.test'
// Everything `app` logs, from the real pino logger at its most talkative level.
const raw: string[] = []

beforeAll(async () => {
  app = await buildTestApp({ REQUEST_TIMEOUT_MS: '45000', LOG_LEVEL: 'trace' }, undefined, {
    logStream: { write: (line: string) => void raw.push(line) },
  })
  corsApp = await buildTestApp({
    CORS_ORIGINS: `${PORTAL},https://admin.example.test`,
    RATE_LIMIT_ANONYMOUS: '3',
  })
})
afterAll(async () => {
  await app.close()
  await corsApp.close()
})

describe('security headers', () => {
  // Headers that act on documents only: pages get them, data does not.
  const PAGE_ONLY = [
    'cross-origin-opener-policy',
    'origin-agent-cluster',
    'x-dns-prefetch-control',
    'x-download-options',
    'x-permitted-cross-domain-policies',
    'x-xss-protection',
  ]

  it('sends the OWASP REST set, a policy that loads nothing and no-store on API and FHIR answers, errors included', async () => {
    const organization = await newOrganization(app)
    const user = await organization.user('PROVIDER')
    const patient = await app.inject({
      method: 'POST',
      url: '/api/patients',
      headers: bearer(user.token),
      payload: patientBody(),
    })
    expect(patient.statusCode).toBe(201)
    const fhirRead = await app.inject({
      url: `/fhir/R4/Patient/${patient.json().data.id}`,
      headers: bearer(user.token),
    })
    expect(fhirRead.statusCode).toBe(200)
    for (const response of [
      await app.inject({ url: '/api/patients', headers: bearer(user.token) }),
      await app.inject({ url: '/api/patients' }),
      await app.inject({ url: '/api/no-such-route' }),
      fhirRead,
      await app.inject({ url: '/fhir/R4/Patient?name=x' }),
    ]) {
      expect(response.headers['content-security-policy']).toContain("default-src 'none'")
      expect(response.headers['content-security-policy']).toContain("frame-ancestors 'none'")
      expect(response.headers['x-content-type-options']).toBe('nosniff')
      expect(response.headers['x-frame-options']).toBe('DENY')
      expect(response.headers['strict-transport-security']).toMatch(/max-age=\d+/)
      expect(response.headers['referrer-policy']).toBe('no-referrer')
      expect(response.headers['cross-origin-resource-policy']).toBe('same-origin')
      expect(response.headers['cache-control']).toBe('no-store')
      expect(response.headers['x-powered-by']).toBeUndefined()
      for (const name of PAGE_ONLY) expect(response.headers[name], name).toBeUndefined()
    }
  })

  it('sends the same headers on the probes, which carry no PHI and so no no-store', async () => {
    const response = await app.inject({ url: '/actuator/health/liveness' })
    expect(response.statusCode).toBe(200)
    expect(response.headers['x-content-type-options']).toBe('nosniff')
    expect(response.headers['x-frame-options']).toBe('DENY')
    expect(response.headers['cache-control']).toBeUndefined()
  })

  it('serves the explorer under a policy that allows exactly what it loads from this service', async () => {
    const redirect = await app.inject({ url: '/swagger-ui.html' })
    expect(redirect.statusCode).toBe(302)
    const page = await app.inject({ url: '/swagger-ui/' })
    expect(page.statusCode).toBe(200)
    const csp = String(page.headers['content-security-policy'])
    expect(csp).toContain("script-src 'self'")
    expect(csp).toContain("connect-src 'self'")
    expect(csp).not.toContain("default-src 'none'")
    expect(csp).not.toMatch(/script-src[^;]*unsafe/)
    for (const name of PAGE_ONLY) expect(page.headers[name], name).toBeDefined()
    expect(page.headers['x-frame-options']).toBe('SAMEORIGIN')

    // Every script and stylesheet of the page comes from the service itself and loads.
    const assets = [...page.body.matchAll(/(?:src|href)="([^"]+)"/g)].map((match) => match[1] as string)
    expect(assets.length).toBeGreaterThanOrEqual(4)
    for (const asset of assets) {
      expect(asset).not.toMatch(/^(https?:)?\/\//)
      const response = await app.inject({ url: new URL(asset, 'http://service/swagger-ui/').pathname })
      expect(response.statusCode, asset).toBe(200)
    }
    const initializer = await app.inject({ url: '/swagger-ui/static/swagger-initializer.js' })
    expect(initializer.headers['content-security-policy']).toBe(csp)
    expect(initializer.body).toContain('validatorUrl')
    // The document the explorer fetches (connect-src 'self').
    const document = await app.inject({ url: '/swagger-ui/json' })
    expect(document.statusCode).toBe(200)
    expect(document.json().openapi).toBe('3.1.0')
  })

  it('gives up on a client that takes longer than REQUEST_TIMEOUT_MS to send its request', () => {
    expect(app.server.requestTimeout).toBe(45_000)
  })
})

describe('CORS', () => {
  const preflight = (target: App, origin: string) =>
    target.inject({
      method: 'OPTIONS',
      url: '/api/patients',
      headers: {
        origin,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization,content-type',
      },
    })

  it('is closed by default: no origin gets an Access-Control-Allow-Origin', async () => {
    const response = await preflight(app, PORTAL)
    expect(response.headers['access-control-allow-origin']).toBeUndefined()
    const simple = await app.inject({ url: '/api/patients', headers: { origin: PORTAL } })
    expect(simple.statusCode).toBe(401)
    expect(simple.headers['access-control-allow-origin']).toBeUndefined()
  })

  it('answers a preflight from a configured origin with the methods and headers the API uses', async () => {
    const response = await preflight(corsApp, PORTAL)
    expect(response.statusCode).toBe(204)
    expect(response.headers['access-control-allow-origin']).toBe(PORTAL)
    expect(String(response.headers['access-control-allow-methods']).split(/,\s*/)).toEqual(
      expect.arrayContaining(['POST', 'PUT', 'PATCH', 'DELETE']),
    )
    const allowed = String(response.headers['access-control-allow-headers']).toLowerCase().split(/,\s*/)
    expect(allowed).toEqual(
      expect.arrayContaining([
        'authorization',
        'content-type',
        'if-match',
        'if-none-match',
        'idempotency-key',
      ]),
    )
    expect(response.headers['access-control-allow-credentials']).toBeUndefined()
  })

  it('does not count preflights against the anonymous rate limit: they carry no token', async () => {
    for (let i = 0; i < 6; i++) {
      const response = await preflight(corsApp, PORTAL)
      expect(response.statusCode).toBe(204)
      expect(response.headers['x-ratelimit-remaining']).toBeUndefined()
    }
  })

  it('lets a configured origin read the answer and its request id, and refuses any other origin', async () => {
    const user = await (await newOrganization(corsApp)).user('PROVIDER')
    const allowed = await corsApp.inject({
      url: '/api/patients',
      headers: { ...bearer(user.token), origin: 'https://admin.example.test' },
    })
    expect(allowed.statusCode).toBe(200)
    expect(allowed.headers['access-control-allow-origin']).toBe('https://admin.example.test')
    expect(String(allowed.headers['access-control-expose-headers']).split(/,\s*/)).toEqual(
      expect.arrayContaining(['X-Request-Id', 'ETag', 'Location', 'Warning']),
    )

    const other = await corsApp.inject({
      url: '/api/patients',
      headers: { ...bearer(user.token), origin: 'https://portal.example.test.evil.example' },
    })
    expect(other.headers['access-control-allow-origin']).toBeUndefined()
    const otherPreflight = await preflight(corsApp, 'https://evil.example')
    expect(otherPreflight.headers['access-control-allow-origin']).toBeUndefined()
  })
})

describe('the log', () => {
  it('never contains a patient’s name, e-mail or birth date, nor the bearer token, whatever the request', async () => {
    const user = await (await newOrganization(app)).user('PROVIDER', 'ADMIN')
    const headers = bearer(user.token)
    const body = patientBody({
      identification: { firstName: FIRST, lastName: LAST, dateOfBirth: BIRTH_DATE, gender: 'Female' },
      contact: { email: EMAIL },
    })
    const created = await app.inject({ method: 'POST', url: '/api/patients', headers, payload: body })
    expect(created.statusCode).toBe(201)
    const id = created.json().data.id

    const read = await app.inject({ url: `/api/patients/${id}`, headers })
    expect(read.statusCode).toBe(200)
    expect(read.json().data.identification.lastName).toBe(LAST)
    const listed = await app.inject({ url: `/api/patients?lastName=${LAST}&firstName=${FIRST}`, headers })
    expect(listed.json().data.totalElements).toBe(1)
    const found = await app.inject({ url: `/api/patients/search?q=${FIRST}%20${LAST}`, headers })
    expect(found.json().data.content[0].id).toBe(id)
    const updated = await app.inject({
      method: 'PUT',
      url: `/api/patients/${id}`,
      headers,
      payload: { identification: { ...body.identification, middleName: `${FIRST}a` } },
    })
    expect(updated.statusCode).toBe(200)

    // Failures: a value where an id belongs, a body breaking the schema, malformed JSON, an unknown
    // route, a duplicate, and a bad token.
    expect((await app.inject({ url: `/api/patients/${LAST}`, headers })).statusCode).toBe(400)
    const invalid = await app.inject({
      method: 'POST',
      url: '/api/patients',
      headers,
      payload: { ...body, identification: { ...body.identification, dateOfBirth: `${LAST}` } },
    })
    expect(invalid.statusCode).toBe(422)
    const malformed = await app.inject({
      method: 'POST',
      url: '/api/patients',
      headers: { ...headers, 'content-type': 'application/json' },
      payload: `{"identification": {"firstName": "${FIRST}"`,
    })
    expect(malformed.statusCode).toBe(400)
    expect((await app.inject({ url: `/api/no-such/${LAST}/${FIRST}`, headers })).statusCode).toBe(404)
    const badToken = await app.inject({ url: '/api/patients', headers: bearer(`${user.token}x`) })
    expect(badToken.statusCode).toBe(401)

    await app.auditLog.flush()
    const log = raw.join('')
    // The log is really being captured: one access line per request above.
    expect(raw.filter((line) => line.includes('"request completed"')).length).toBeGreaterThanOrEqual(10)
    expect(log).toContain('"url":"/api/patients/:id"')
    const access = raw.map((line) => JSON.parse(line)).find((line) => line.msg === 'request completed')
    expect(access).toMatchObject({
      level: 30,
      reqId: expect.any(String),
      req: { method: expect.any(String), url: expect.stringMatching(/^\//) },
      res: { statusCode: expect.any(Number) },
      responseTime: expect.any(Number),
    })
    for (const secret of [FIRST, LAST, EMAIL, BIRTH_DATE, user.token, user.token.split('.')[2] as string]) {
      expect(log.includes(secret), `the log contains ${secret.slice(0, 24)}`).toBe(false)
    }
  })

  it('censors credentials in anything logged with headers or a password', () => {
    app.log.info(
      { headers: { authorization: 'Bearer abc.def.ghi' }, login: { password: 'hunter2-hunter2' } },
      'diagnostic',
    )
    const line = raw.find((entry) => entry.includes('"diagnostic"'))
    expect(line).toBeDefined()
    expect(line).not.toContain('abc.def.ghi')
    expect(line).not.toContain('hunter2')
    expect(line).toContain('[redacted]')
  })
})
