import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { buildTestApp } from '../../helpers/app.js'
import { bearer, createPatient, newOrganization, type TestUser } from '../../helpers/factories.js'

let app: App
let nurse: TestUser

beforeAll(async () => {
  app = await buildTestApp()
  nurse = await (await newOrganization(app)).user('NURSE', 'PROVIDER')
})
afterAll(async () => {
  await app.close()
})

describe('a URL the router cannot take', () => {
  it('returns 400 VAL_001 in the envelope for a path parameter over the length limit', async () => {
    const response = await app.inject({
      url: `/api/patients/${'9'.repeat(500)}`,
      headers: bearer(nurse.token),
    })
    expect(response.statusCode).toBe(400)
    expect(response.json()).toEqual({
      success: false,
      message: 'Invalid request',
      error: { code: 'VAL_001', details: 'A path parameter is too long' },
    })
  })

  it('returns 400 VAL_001 in the envelope for malformed percent-encoding', async () => {
    const response = await app.inject({ url: '/api/patients/%E0%A4%A', headers: bearer(nurse.token) })
    expect(response.statusCode).toBe(400)
    expect(response.json()).toMatchObject({
      success: false,
      error: { code: 'VAL_001', details: 'The URL is malformed' },
    })
  })
})

describe('POST /api/patients/:patientId/documents with a body the parser cannot read', () => {
  it.each([
    ['no boundary', 'multipart/form-data', '{'],
    [
      'a body cut short inside the file',
      'multipart/form-data; boundary=xyz',
      '--xyz\r\nContent-Disposition: form-data; name="title"\r\n\r\nScan\r\n--xyz\r\nContent-Disposition: form-data; name="category"\r\n\r\nOTHER\r\n--xyz\r\nContent-Disposition: form-data; name="file"; filename="a.pdf"\r\nContent-Type: application/pdf\r\n\r\n%PDF-1.7\n',
    ],
    [
      'a prototype field name',
      'multipart/form-data; boundary=xyz',
      '--xyz\r\nContent-Disposition: form-data; name="__proto__"\r\n\r\nx\r\n--xyz--\r\n',
    ],
  ])('returns 400 VAL_001 for %s', async (_case, contentType, payload) => {
    const patientId = await createPatient(app, nurse)
    const response = await app.inject({
      method: 'POST',
      url: `/api/patients/${patientId}/documents`,
      headers: { ...bearer(nurse.token), 'content-type': contentType },
      payload,
    })
    expect(response.statusCode, response.body).toBe(400)
    expect(response.json()).toMatchObject({ success: false, error: { code: 'VAL_001' } })
    const stored = await app.db
      .selectFrom('documents')
      .select('id')
      .where('patient_id', '=', patientId)
      .execute()
    expect(stored).toEqual([])
  })
})

describe('a JSON body nested deeper than 64 levels', () => {
  const deep = (levels: number) => `${'['.repeat(levels)}${']'.repeat(levels)}`
  const nestingLimit = /nests arrays and objects more than 64 levels deep/

  it.each([
    ['unclosed brackets', '['.repeat(10_000)],
    ['closed brackets', deep(10_000)],
    ['objects', `${'{"a":'.repeat(65)}1${'}'.repeat(65)}`],
  ])('returns 400 VAL_001 naming the limit for %s, without a token', async (_case, payload) => {
    const response = await app.inject({
      method: 'POST',
      url: '/api/auth/login',
      headers: { 'content-type': 'application/json' },
      payload,
    })
    expect(response.statusCode).toBe(400)
    expect(response.json()).toEqual({
      success: false,
      message: 'Invalid request',
      error: { code: 'VAL_001', details: expect.stringMatching(nestingLimit) },
    })
  })

  it('returns 400 VAL_001 for a merge patch', async () => {
    const patientId = await createPatient(app, nurse)
    const response = await app.inject({
      method: 'PATCH',
      url: `/api/patients/${patientId}`,
      headers: { ...bearer(nurse.token), 'content-type': 'application/merge-patch+json' },
      payload: `{"identification":${deep(10_000)}}`,
    })
    expect(response.statusCode).toBe(400)
    expect(response.json().error).toEqual({ code: 'VAL_001', details: expect.stringMatching(nestingLimit) })
  })

  it.each(['application/fhir+json', 'application/json'])(
    'returns 400 as an OperationOutcome on a FHIR route (%s)',
    async (contentType) => {
      const response = await app.inject({
        method: 'POST',
        url: '/fhir/R4/Patient/_search',
        headers: { ...bearer(nurse.token), 'content-type': contentType },
        payload: deep(10_000),
      })
      expect(response.statusCode).toBe(400)
      expect(response.json()).toMatchObject({
        resourceType: 'OperationOutcome',
        issue: [{ severity: 'error', diagnostics: expect.stringMatching(nestingLimit) }],
      })
    },
  )

  it('passes a body nested exactly 64 levels on to validation (422), brackets inside strings not counted', async () => {
    const response = await app.inject({
      method: 'POST',
      url: '/api/auth/login',
      headers: { 'content-type': 'application/json' },
      payload: `{"username":"[[[[{{{{${'['.repeat(100)}","password":${deep(63)}}`,
    })
    expect(response.statusCode).toBe(422)
    expect(response.json().error).toMatchObject({ code: 'VAL_001', fields: [{ path: 'password' }] })
  })
})
