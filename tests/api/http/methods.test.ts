import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { buildTestApp } from '../../helpers/app.js'
import { bearer, newOrganization, patientBody, type TestUser } from '../../helpers/factories.js'

let app: App

beforeAll(async () => {
  app = await buildTestApp()
})
afterAll(async () => {
  await app.close()
})

// Headers that differ between any two answers whatever the method.
const PER_RESPONSE = ['date', 'x-request-id', 'x-ratelimit-remaining', 'x-ratelimit-reset']
const comparable = (headers: Record<string, unknown>) =>
  Object.fromEntries(Object.entries(headers).filter(([name]) => !PER_RESPONSE.includes(name)))

async function registeredPatient(user: TestUser): Promise<number> {
  const response = await app.inject({
    method: 'POST',
    url: '/api/patients',
    headers: bearer(user.token),
    payload: patientBody(),
  })
  expect(response.statusCode).toBe(201)
  return response.json().data.id
}

// The latency histogram's count of successful reads of one patient.
async function patientReadsCounted(): Promise<number> {
  const text = (await app.inject({ url: '/actuator/prometheus' })).body
  const series =
    'http_request_duration_seconds_count{method="GET",route="/api/patients/:id",status_class="2xx"}'
  const line = text.split('\n').find((candidate) => candidate.startsWith(`${series} `))
  return Number(line?.split(' ')[1] ?? 0)
}

async function auditRows(organizationId: number, count: number) {
  for (let attempt = 0; attempt < 100; attempt++) {
    await app.auditLog.flush()
    const rows = await app.db
      .selectFrom('audit_log')
      .select(['action', 'resource_type', 'resource_ids', 'outcome'])
      .where('organization_id', '=', organizationId)
      .orderBy('id')
      .execute()
    if (rows.length >= count) return rows
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  throw new Error(`fewer than ${count} audit records`)
}

describe('HEAD', () => {
  it('returns 200 for /actuator/health with the headers of GET and no body', async () => {
    const get = await app.inject({ url: '/actuator/health' })
    const head = await app.inject({ method: 'HEAD', url: '/actuator/health' })
    expect(head.statusCode).toBe(get.statusCode)
    expect(head.body).toBe('')
    expect(comparable(head.headers)).toEqual(comparable(get.headers))
  })

  it('returns 200 for a patient with the ETag and length of GET, audited and counted like GET', async () => {
    const organization = await newOrganization(app)
    const provider = await organization.user('PROVIDER')
    const id = await registeredPatient(provider)
    const get = await app.inject({ url: `/api/patients/${id}`, headers: bearer(provider.token) })
    const counted = await patientReadsCounted()
    const head = await app.inject({
      method: 'HEAD',
      url: `/api/patients/${id}`,
      headers: bearer(provider.token),
    })
    expect(head.statusCode).toBe(200)
    expect(head.body).toBe('')
    expect(await patientReadsCounted()).toBe(counted + 1)
    expect(comparable(head.headers)).toEqual(comparable(get.headers))
    expect(head.headers['content-length']).toBe(String(Buffer.byteLength(get.body)))
    expect(head.headers['x-ratelimit-limit']).toBe(get.headers['x-ratelimit-limit'])
    expect(Number(head.headers['x-ratelimit-remaining'])).toBe(
      Number(get.headers['x-ratelimit-remaining']) - 1,
    )
    const rows = await auditRows(organization.id, 3)
    expect(rows.slice(1)).toEqual([
      { action: 'READ', resource_type: 'patient', resource_ids: [id], outcome: 'SUCCESS' },
      { action: 'READ', resource_type: 'patient', resource_ids: [id], outcome: 'SUCCESS' },
    ])
  })

  it('returns 304 when If-None-Match names the current version, as GET does', async () => {
    const organization = await newOrganization(app)
    const provider = await organization.user('PROVIDER')
    const id = await registeredPatient(provider)
    const get = await app.inject({ url: `/api/patients/${id}`, headers: bearer(provider.token) })
    const head = await app.inject({
      method: 'HEAD',
      url: `/api/patients/${id}`,
      headers: { ...bearer(provider.token), 'if-none-match': String(get.headers.etag) },
    })
    expect(head.statusCode).toBe(304)
    expect(head.body).toBe('')
  })

  it('returns 401 without a token, as GET does', async () => {
    const head = await app.inject({ method: 'HEAD', url: '/api/patients' })
    expect(head.statusCode).toBe(401)
    expect(head.body).toBe('')
  })

  it('returns 200 for a FHIR read with the headers of GET and no body', async () => {
    const organization = await newOrganization(app)
    const provider = await organization.user('PROVIDER')
    const id = await registeredPatient(provider)
    const get = await app.inject({ url: `/fhir/R4/Patient/${id}`, headers: bearer(provider.token) })
    const head = await app.inject({
      method: 'HEAD',
      url: `/fhir/R4/Patient/${id}`,
      headers: bearer(provider.token),
    })
    expect(head.statusCode).toBe(200)
    expect(head.body).toBe('')
    expect(comparable(head.headers)).toEqual(comparable(get.headers))
  })

  it('adds no HEAD operation to the OpenAPI document', () => {
    const paths = Object.values((app.swagger() as { paths: Record<string, object> }).paths)
    expect(paths.filter((operations) => 'head' in operations)).toEqual([])
  })
})

describe('a known path with another method', () => {
  it('returns 405 RES_001 with Allow for DELETE /api/providers', async () => {
    const response = await app.inject({ method: 'DELETE', url: '/api/providers' })
    expect(response.statusCode).toBe(405)
    expect(response.headers.allow).toBe('GET, HEAD, POST')
    expect(response.json()).toEqual({
      success: false,
      message: 'Method not allowed',
      error: {
        code: 'RES_001',
        details: 'DELETE is not allowed on /api/providers; allowed: GET, HEAD, POST',
      },
    })
  })

  it('returns 405 for a path with parameters, listing only its own methods', async () => {
    const response = await app.inject({ method: 'POST', url: '/api/providers/17' })
    expect(response.statusCode).toBe(405)
    expect(response.headers.allow).toBe('GET, HEAD, PATCH, PUT')
  })

  it('returns 405 for HEAD on a path without GET', async () => {
    const response = await app.inject({ method: 'HEAD', url: '/api/auth/login' })
    expect(response.statusCode).toBe(405)
    expect(response.headers.allow).toBe('POST')
    expect(response.body).toBe('')
  })

  it('returns 405 as an OperationOutcome under /fhir', async () => {
    // Encounters are written but never deleted: visit notes are never removed.
    const response = await app.inject({ method: 'DELETE', url: '/fhir/R4/Encounter/5' })
    expect(response.statusCode).toBe(405)
    expect(response.headers.allow).toBe('GET, HEAD, PATCH, PUT')
    expect(response.headers['content-type']).toMatch(/^application\/fhir\+json/)
    expect(response.json()).toEqual({
      resourceType: 'OperationOutcome',
      issue: [
        {
          severity: 'error',
          code: 'not-supported',
          diagnostics: 'DELETE is not allowed on /fhir/R4/Encounter/5; allowed: GET, HEAD, PATCH, PUT',
        },
      ],
    })
  })

  it('still returns 404 for a path no route has', async () => {
    const response = await app.inject({ method: 'DELETE', url: '/api/nothing-here' })
    expect(response.statusCode).toBe(404)
    expect(response.headers.allow).toBeUndefined()
    expect(response.json().error.code).toBe('RES_001')
  })

  it('lists OPTIONS when CORS preflights are answered', async () => {
    // An app of its own, after the tests that read metrics: each app starts the registry afresh.
    const corsApp = await buildTestApp({ CORS_ORIGINS: 'https://portal.example.test' })
    try {
      const response = await corsApp.inject({ method: 'DELETE', url: '/api/providers' })
      expect(response.statusCode).toBe(405)
      expect(response.headers.allow).toBe('GET, HEAD, OPTIONS, POST')
    } finally {
      await corsApp.close()
    }
  })
})
