import { createHash } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { brotliDecompressSync, gunzipSync } from 'node:zlib'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { buildTestApp } from '../../helpers/app.js'
import {
  bearer,
  createPatient,
  newOrganization,
  patientBody,
  type TestUser,
} from '../../helpers/factories.js'
import { multipart } from '../../helpers/multipart.js'

// `inject` hands back the bytes as sent: a compressed body stays compressed, so each test decodes it.
let app: App
let dataDir: string
/** Per `METHOD /route`: whether a hook of @fastify/compress ran on the last request (it sets `reply.compress`). */
const compressHookRan = new Map<string, boolean>()

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(tmpdir(), 'ehr-compression-'))
  app = await buildTestApp({ DATA_DIR: dataDir }, (app) => {
    app.addHook('onResponse', async (request, reply) => {
      compressHookRan.set(
        `${request.method} ${request.routeOptions.url}`,
        typeof reply.compress === 'function',
      )
    })
  })
})
afterAll(async () => {
  await app.close()
  await rm(dataDir, { recursive: true, force: true })
})

/** The document as @fastify/swagger builds it, in the form a client parses. */
const swaggerDocument = () => JSON.parse(JSON.stringify(app.swagger()))

const getDocument = (headers: Record<string, string> = {}, url = '/v3/api-docs') =>
  app.inject({ url, headers })

describe('GET /v3/api-docs', () => {
  it('returns 200 with the document in brotli when the client accepts br', async () => {
    const response = await getDocument({ 'accept-encoding': 'gzip, deflate, br' })
    expect(response.statusCode).toBe(200)
    expect(response.headers['content-encoding']).toBe('br')
    expect(response.headers.vary).toMatch(/accept-encoding/i)
    expect(response.headers['cache-control']).toBe('no-cache')
    expect(response.headers['content-type']).toBe('application/json; charset=utf-8')
    expect(Number(response.headers['content-length'])).toBe(response.rawPayload.length)
    expect(JSON.parse(brotliDecompressSync(response.rawPayload).toString())).toStrictEqual(swaggerDocument())
  })

  it('returns 200 with the document in gzip when the client accepts gzip only', async () => {
    const response = await getDocument({ 'accept-encoding': 'gzip' })
    expect(response.statusCode).toBe(200)
    expect(response.headers['content-encoding']).toBe('gzip')
    expect(Number(response.headers['content-length'])).toBe(response.rawPayload.length)
    expect(JSON.parse(gunzipSync(response.rawPayload).toString())).toStrictEqual(swaggerDocument())
  })

  it('returns 200 with the document as is when the client accepts no encoding', async () => {
    const refusals: Record<string, string>[] = [
      {},
      { 'accept-encoding': 'identity' },
      { 'accept-encoding': 'br;q=0, gzip;q=0' },
    ]
    for (const headers of refusals) {
      const response = await getDocument(headers)
      expect(response.statusCode).toBe(200)
      expect(response.headers['content-encoding']).toBeUndefined()
      expect(response.headers.vary).toMatch(/accept-encoding/i)
      expect(response.json()).toStrictEqual(swaggerDocument())
    }
  })

  it('answers with the encoding of the highest q-value, the smaller on a tie', async () => {
    const gzipFirst = await getDocument({ 'accept-encoding': 'br;q=0.5, gzip' })
    expect(gzipFirst.headers['content-encoding']).toBe('gzip')
    const anything = await getDocument({ 'accept-encoding': '*' })
    expect(anything.headers['content-encoding']).toBe('br')
  })

  it('carries a strong ETag, the SHA-256 of the JSON, the same on every request and one per coding', async () => {
    const plain = await getDocument()
    const hash = createHash('sha256').update(plain.rawPayload).digest('base64url')
    expect(plain.headers.etag).toBe(`"${hash}"`)
    expect((await getDocument()).headers.etag).toBe(`"${hash}"`)
    expect((await getDocument({ 'accept-encoding': 'gzip' })).headers.etag).toBe(`"${hash}-gzip"`)
    expect((await getDocument({ 'accept-encoding': 'br' })).headers.etag).toBe(`"${hash}-br"`)
  })

  it('returns 304 with no body when If-None-Match names the ETag, and 200 when it names another', async () => {
    const first = await getDocument({ 'accept-encoding': 'br' })
    const etag = String(first.headers.etag)
    const again = await getDocument({ 'accept-encoding': 'br', 'if-none-match': `"other", ${etag}` })
    expect(again.statusCode).toBe(304)
    expect(again.rawPayload.length).toBe(0)
    expect(again.headers.etag).toBe(etag)
    expect(again.headers['content-encoding']).toBeUndefined()

    const stale = await getDocument({ 'accept-encoding': 'br', 'if-none-match': '"stale"' })
    expect(stale.statusCode).toBe(200)
    // The tag of another coding's bytes does not validate these.
    const otherCoding = await getDocument({ 'accept-encoding': 'gzip', 'if-none-match': etag })
    expect(otherCoding.statusCode).toBe(200)
  })
})

describe('GET /swagger-ui/json', () => {
  it('returns 200 with the same compressed document and ETag as /v3/api-docs, and 304 on revalidation', async () => {
    const headers = { 'accept-encoding': 'br' }
    const explorer = await getDocument(headers, '/swagger-ui/json')
    const docs = await getDocument(headers)
    expect(explorer.statusCode).toBe(200)
    expect(explorer.headers['content-encoding']).toBe('br')
    expect(explorer.headers.etag).toBe(docs.headers.etag)
    expect(explorer.rawPayload.equals(docs.rawPayload)).toBe(true)
    const revalidated = await getDocument(
      { ...headers, 'if-none-match': String(explorer.headers.etag) },
      '/swagger-ui/json',
    )
    expect(revalidated.statusCode).toBe(304)
    expect(revalidated.rawPayload.length).toBe(0)
  })
})

describe('Which routes compress', () => {
  it('compresses the list pages under /api and the FHIR searches, and nothing else', () => {
    const routes = app.compressedRoutes
    expect(routes).toContain('GET /api/patients')
    expect(routes).toContain('GET /api/patients/:patientId/documents')
    expect(routes).toContain('GET /fhir/R4/Patient')
    expect(routes).toContain('POST /fhir/R4/Observation/_search')
    expect(routes).not.toContain('GET /api/patients/:id')
    expect(routes).not.toContain('GET /fhir/R4/Patient/:id')
    expect(routes).not.toContain('GET /api/events')
    const others = routes.filter(
      (route) =>
        !route.startsWith('GET /api/') && !/^(GET|POST) \/fhir\/R4\/[A-Za-z]+(\/_search)?$/.test(route),
    )
    expect(others).toEqual([])
    expect(routes.filter((route) => route.includes('download'))).toEqual([])
  })
})

describe('GET /fhir/R4/Patient (a FHIR search)', () => {
  it('returns the searchset in gzip above 1 KB when the client accepts gzip, and as is when it does not', async () => {
    const nurse = await (await newOrganization(app)).user('NURSE')
    for (let i = 0; i < 5; i++) await createPatient(app, nurse)
    const search = (headers: Record<string, string>) =>
      app.inject({ url: '/fhir/R4/Patient?_count=5', headers: { ...bearer(nurse.token), ...headers } })
    const compressed = await search({ 'accept-encoding': 'gzip' })
    expect(compressed.statusCode).toBe(200)
    expect(compressed.headers['content-encoding']).toBe('gzip')
    expect(compressed.headers['content-type']).toMatch(/^application\/fhir\+json/)
    const bundle = JSON.parse(gunzipSync(compressed.rawPayload).toString())
    expect(bundle).toMatchObject({ resourceType: 'Bundle', type: 'searchset' })
    expect(bundle.entry).toHaveLength(5)
    const plain = await search({})
    expect(plain.headers['content-encoding']).toBeUndefined()
    expect(plain.rawPayload.length).toBeGreaterThan(1024)
    expect(plain.json()).toEqual(bundle)
  })
})

describe('GET /api/patients', () => {
  let nurse: TestUser

  beforeAll(async () => {
    nurse = await (await newOrganization(app)).user('NURSE')
    for (let i = 0; i < 30; i++) await createPatient(app, nurse)
  })

  const list = (headers: Record<string, string>, user = nurse) =>
    app.inject({ url: '/api/patients?size=100', headers: { ...bearer(user.token), ...headers } })

  it('returns 200 with a page above 1 KB in gzip when the client accepts gzip', async () => {
    const response = await list({ 'accept-encoding': 'gzip' })
    expect(response.statusCode).toBe(200)
    expect(response.headers['content-encoding']).toBe('gzip')
    expect(response.headers.vary).toMatch(/accept-encoding/i)
    // Compressed in one go (exact length) or, past the plugin's synchronous limit, streamed (chunked).
    expect([undefined, String(response.rawPayload.length)]).toContain(response.headers['content-length'])
    const body = JSON.parse(gunzipSync(response.rawPayload).toString())
    expect(body).toMatchObject({ success: true, data: { totalElements: 30, first: true, last: true } })
    expect(body.data.content).toHaveLength(30)
    expect(compressHookRan.get('GET /api/patients')).toBe(true)
    expect(response.rawPayload.length).toBeLessThan(Buffer.byteLength(JSON.stringify(body)) / 3)
  })

  it('returns 200 with the page in brotli when the client prefers it', async () => {
    const response = await list({ 'accept-encoding': 'gzip, br' })
    expect(response.statusCode).toBe(200)
    expect(response.headers['content-encoding']).toBe('br')
    expect(JSON.parse(brotliDecompressSync(response.rawPayload).toString()).data.content).toHaveLength(30)
  })

  it('returns 200 uncompressed when the client accepts no encoding', async () => {
    const response = await list({})
    expect(response.statusCode).toBe(200)
    expect(response.headers['content-encoding']).toBeUndefined()
    expect(response.json().data.content).toHaveLength(30)
  })

  it('returns 200 uncompressed when the page is under 1 KB', async () => {
    const alone = await (await newOrganization(app)).user('NURSE')
    const response = await list({ 'accept-encoding': 'gzip, br' }, alone)
    expect(response.statusCode).toBe(200)
    expect(response.rawPayload.length).toBeLessThan(1024)
    expect(response.headers['content-encoding']).toBeUndefined()
    expect(response.json()).toMatchObject({ success: true, data: { totalElements: 0 } })
  })
})

describe('GET /api/patients/{id}', () => {
  it('returns 200 uncompressed, without Vary: Accept-Encoding and without a compression hook, even above 1 KB', async () => {
    const nurse = await (await newOrganization(app)).user('NURSE')
    const long = (letter: string, length: number) => letter.repeat(length)
    const id = await createPatient(
      app,
      nurse,
      patientBody({
        contact: {
          email: 'long@example.com',
          address: { street: long('s', 200), city: long('c', 100), state: long('t', 100), country: 'PT' },
        },
        emergencyContact: {
          name: long('n', 200),
          relationship: long('r', 50),
          phoneNumber: '+1 555 010 4477',
        },
      }),
    )
    const response = await app.inject({
      url: `/api/patients/${id}`,
      headers: { ...bearer(nurse.token), 'accept-encoding': 'gzip, deflate, br' },
    })
    expect(response.statusCode).toBe(200)
    expect(response.rawPayload.length).toBeGreaterThan(1024)
    expect(response.headers['content-encoding']).toBeUndefined()
    expect(String(response.headers.vary ?? '')).not.toMatch(/accept-encoding/i)
    expect(response.json().data.id).toBe(id)
    // The hot path: not one more hook per request for a route that never compresses.
    expect(compressHookRan.get('GET /api/patients/:id')).toBe(false)
  })
})

describe('GET /api/documents/{documentId}/download', () => {
  // Plain text: a type @fastify/compress would compress, were the route not left alone.
  const content = Buffer.from('Blood pressure 120/80 mmHg, pulse 72.\n'.repeat(140).slice(0, 5000))
  let nurse: TestUser
  let url: string

  beforeAll(async () => {
    nurse = await (await newOrganization(app)).user('NURSE')
    const patientId = await createPatient(app, nurse)
    const body = multipart([
      ['title', 'Vitals'],
      ['category', 'LAB_REPORT'],
      { fileName: 'vitals.txt', contentType: 'text/plain', content },
    ])
    const upload = await app.inject({
      method: 'POST',
      url: `/api/patients/${patientId}/documents`,
      headers: { ...bearer(nurse.token), ...body.headers },
      payload: body.payload,
    })
    expect(upload.statusCode).toBe(201)
    url = `/api/documents/${upload.json().data.id}/download`
  })

  it('returns 206 uncompressed with the Content-Range of the bytes asked for', async () => {
    const response = await app.inject({
      url,
      headers: { ...bearer(nurse.token), range: 'bytes=100-1599', 'accept-encoding': 'gzip, br' },
    })
    expect(response.statusCode).toBe(206)
    expect(response.headers['content-encoding']).toBeUndefined()
    expect(response.headers['content-range']).toBe('bytes 100-1599/5000')
    expect(response.headers['content-length']).toBe('1500')
    expect(response.rawPayload.equals(content.subarray(100, 1600))).toBe(true)
  })

  it('returns 200 with the whole file uncompressed and its exact length when gzip is accepted', async () => {
    const response = await app.inject({
      url,
      headers: { ...bearer(nurse.token), 'accept-encoding': 'gzip, br' },
    })
    expect(response.statusCode).toBe(200)
    expect(response.headers['content-encoding']).toBeUndefined()
    expect(response.headers['content-length']).toBe('5000')
    expect(response.rawPayload.equals(content)).toBe(true)
  })
})
