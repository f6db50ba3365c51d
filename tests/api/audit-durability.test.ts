import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../src/app.js'
import { buildTestApp } from '../helpers/app.js'
import { bearer, createPatient, newOrganization, type TestUser } from '../helpers/factories.js'
import { multipart } from '../helpers/multipart.js'

let app: App
let provider: TestUser
let patientId: number

// Success records of calls whose request id starts with this cannot be written (a trigger refuses
// them), as when the database fails the audit insert alone; their error records can.
const FAILING = 'audit-fails-'

beforeAll(async () => {
  // The timer never fires during these tests: whatever is stored was stored by the call itself.
  app = await buildTestApp({ AUDIT_FLUSH_INTERVAL_MS: '60000' })
  await sql`create function refuse_audit() returns trigger language plpgsql as $$
    begin raise exception 'audit refused'; end $$`.execute(app.db)
  await sql`create trigger refuse_audit before insert on audit_log for each row
    when (new.request_id like ${sql.lit(`${FAILING}%`)} and new.status_code < 400)
    execute function refuse_audit()`.execute(app.db)
  provider = await (await newOrganization(app)).user('PROVIDER')
  patientId = await createPatient(app, provider)
})
afterAll(async () => {
  await app.close()
})

let requests = 0
const requestId = (prefix = 'audited-') => `${prefix}${process.pid}-${++requests}`

const recordsOf = (id: string) =>
  app.db
    .selectFrom('audit_log')
    .select(['action', 'resource_type', 'resource_ids', 'outcome', 'status_code'])
    .where('request_id', '=', id)
    .execute()

async function uploadDocument(): Promise<number> {
  const body = multipart([
    ['title', 'Referral'],
    ['category', 'REFERRAL'],
    { fileName: 'referral.txt', contentType: 'text/plain', content: Buffer.from('Referral letter') },
  ])
  const response = await app.inject({
    method: 'POST',
    url: `/api/patients/${patientId}/documents`,
    headers: { ...bearer(provider.token), ...body.headers },
    payload: body.payload,
  })
  expect(response.statusCode).toBe(201)
  return response.json().data.id
}

describe('audit records of answered calls', () => {
  it('returns 200 to GET /api/patients/{id} with its READ record already stored', async () => {
    const id = requestId()
    const response = await app.inject({
      url: `/api/patients/${patientId}`,
      headers: { ...bearer(provider.token), 'x-request-id': id },
    })
    expect(response.statusCode).toBe(200)
    expect(await recordsOf(id)).toEqual([
      {
        action: 'READ',
        resource_type: 'patient',
        resource_ids: [patientId],
        outcome: 'SUCCESS',
        status_code: 200,
      },
    ])
  })

  it('returns 200 to GET /fhir/R4/Patient/{id} with its READ record already stored', async () => {
    const id = requestId()
    const response = await app.inject({
      url: `/fhir/R4/Patient/${patientId}`,
      headers: { ...bearer(provider.token), 'x-request-id': id },
    })
    expect(response.statusCode).toBe(200)
    expect(await recordsOf(id)).toEqual([expect.objectContaining({ action: 'READ', status_code: 200 })])
  })

  it('returns 403 with its DENIED record already stored', async () => {
    const billing = await (await newOrganization(app)).user('BILLING')
    const id = requestId()
    const response = await app.inject({
      url: `/api/patients/${patientId}`,
      headers: { ...bearer(billing.token), 'x-request-id': id },
    })
    expect(response.statusCode).toBe(403)
    expect(await recordsOf(id)).toEqual([expect.objectContaining({ outcome: 'DENIED', status_code: 403 })])
  })
})

describe('a read whose audit record cannot be written', () => {
  it('answers 503 SYS_002 to GET /api/patients/{id}, without the patient', async () => {
    const id = requestId(FAILING)
    const response = await app.inject({
      url: `/api/patients/${patientId}`,
      headers: { ...bearer(provider.token), 'x-request-id': id },
    })
    expect(response.statusCode).toBe(503)
    expect(response.json()).toMatchObject({ success: false, error: { code: 'SYS_002' } })
    expect(response.body).not.toContain('Jane')
    expect(response.headers.etag).toBeUndefined()
    // What was answered is on record: an error, not a read.
    expect(await recordsOf(id)).toEqual([expect.objectContaining({ outcome: 'ERROR', status_code: 503 })])
  })

  it('answers 503 with an OperationOutcome to GET /fhir/R4/Patient/{id}, without the patient', async () => {
    const response = await app.inject({
      url: `/fhir/R4/Patient/${patientId}`,
      headers: { ...bearer(provider.token), 'x-request-id': requestId(FAILING) },
    })
    expect(response.statusCode).toBe(503)
    expect(response.json()).toMatchObject({ resourceType: 'OperationOutcome' })
    expect(response.body).not.toContain('Jane')
  })

  it('answers 503 SYS_002 to a document download, without the bytes', async () => {
    const documentId = await uploadDocument()
    const response = await app.inject({
      url: `/api/documents/${documentId}/download`,
      headers: { ...bearer(provider.token), 'x-request-id': requestId(FAILING) },
    })
    expect(response.statusCode).toBe(503)
    expect(response.headers['content-type']).toMatch(/^application\/json/)
    expect(response.headers['content-disposition']).toBeUndefined()
    expect(response.json()).toMatchObject({ success: false, error: { code: 'SYS_002' } })
  })
})
