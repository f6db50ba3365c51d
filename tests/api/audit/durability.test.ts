import { sql } from 'kysely'
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

let app: App
let provider: TestUser
let biller: TestUser
let patientId: number

// Success records of calls whose request id starts with this cannot be written (a trigger refuses
// them), as when the database fails the audit insert alone; their error records can.
const FAILING = 'audit-fails-'
// Transactions that wrote the success record of a call whose request id starts with this fail at
// their commit, after every statement succeeded (a deferred constraint trigger): as a crash or a
// lost connection between the last statement and the commit would leave them.
const ROLLED_BACK = 'rolled-back-'

beforeAll(async () => {
  // The timer never fires during these tests: whatever is stored was stored by the call itself.
  app = await buildTestApp({ AUDIT_FLUSH_INTERVAL_MS: '60000' })
  await sql`create function refuse_audit() returns trigger language plpgsql as $$
    begin raise exception 'audit refused'; end $$`.execute(app.db)
  await sql`create trigger refuse_audit before insert on audit_log for each row
    when (new.request_id like ${sql.lit(`${FAILING}%`)} and new.status_code < 400)
    execute function refuse_audit()`.execute(app.db)
  await sql`create constraint trigger fail_at_commit after insert on audit_log
    deferrable initially deferred for each row
    when (new.request_id like ${sql.lit(`${ROLLED_BACK}%`)} and new.outcome = 'SUCCESS')
    execute function refuse_audit()`.execute(app.db)
  const organization = await newOrganization(app)
  provider = await organization.user('PROVIDER')
  biller = await organization.user('BILLING')
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

function upload(title: string, id = requestId()) {
  const body = multipart([
    ['title', title],
    ['category', 'REFERRAL'],
    { fileName: 'referral.txt', contentType: 'text/plain', content: Buffer.from('Referral letter') },
  ])
  return app.inject({
    method: 'POST',
    url: `/api/patients/${patientId}/documents`,
    headers: { ...bearer(provider.token), ...body.headers, 'x-request-id': id },
    payload: body.payload,
  })
}

async function uploadDocument(): Promise<number> {
  const response = await upload('Referral')
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

describe('the audit record of a change', () => {
  const registration = (id: string) =>
    app.inject({
      method: 'POST',
      url: '/api/patients',
      headers: { ...bearer(provider.token), 'x-request-id': id },
      payload: patientBody(),
    })
  const invoice = (id: string) =>
    app.inject({
      method: 'POST',
      url: '/api/billing/invoices',
      headers: { ...bearer(biller.token), 'x-request-id': id },
      payload: {
        patientId,
        dueDate: '2026-12-31',
        lineItems: [{ code: '99213', description: 'Visit', quantity: 1, unitPrice: 100 }],
      },
    })
  const patientCount = async () =>
    Number(
      (
        await app.db
          .selectFrom('patients')
          .select((eb) => eb.fn.countAll<number>().as('count'))
          .where('organization_id', '=', provider.organizationId)
          .executeTakeFirstOrThrow()
      ).count,
    )
  const invoiceCount = async () =>
    Number(
      (
        await app.db
          .selectFrom('invoices')
          .select((eb) => eb.fn.countAll<number>().as('count'))
          .where('organization_id', '=', biller.organizationId)
          .executeTakeFirstOrThrow()
      ).count,
    )

  it('returns 201 to POST /api/patients with its CREATE record written by the statement that registered the patient', async () => {
    const id = requestId()
    const response = await registration(id)
    expect(response.statusCode).toBe(201)
    const created = response.json().data
    const records = await app.db
      .selectFrom('audit_log')
      .select(['resource_ids', 'status_code', 'outcome', 'recorded_at'])
      .where('request_id', '=', id)
      .execute()
    expect(records).toHaveLength(1)
    const [record] = records
    expect(record).toMatchObject({ resource_ids: [created.id], status_code: 201, outcome: 'SUCCESS' })
    // now() is the time the transaction began: the same for the patient and its record.
    expect(new Date(record?.recorded_at as Date).toISOString()).toBe(created.createdAt)
  })

  it('returns 201 to POST /api/billing/invoices with its CREATE record committed in the invoice’s transaction', async () => {
    const id = requestId()
    const response = await invoice(id)
    expect(response.statusCode).toBe(201)
    const created = response.json().data
    const records = await app.db
      .selectFrom('audit_log')
      .select(['resource_ids', 'status_code', 'recorded_at'])
      .where('request_id', '=', id)
      .execute()
    expect(records).toHaveLength(1)
    const [record] = records
    expect(record).toMatchObject({ resource_ids: [created.id], status_code: 201 })
    expect(new Date(record?.recorded_at as Date).toISOString()).toBe(created.createdAt)
  })

  it('leaves neither the patient nor a success record when the registration fails at its commit', async () => {
    const id = requestId(ROLLED_BACK)
    const response = await registration(id)
    expect(response.statusCode).toBe(500)
    expect(response.json()).toMatchObject({ success: false, error: { code: 'SYS_001' } })
    expect(await recordsOf(id)).toEqual([expect.objectContaining({ outcome: 'ERROR', status_code: 500 })])
  })

  it('leaves neither the invoice nor a success record when the invoice’s transaction fails at its commit', async () => {
    const before = await invoiceCount()
    const id = requestId(ROLLED_BACK)
    const response = await invoice(id)
    expect(response.statusCode).toBe(500)
    expect(await invoiceCount()).toBe(before)
    expect(await recordsOf(id)).toEqual([expect.objectContaining({ outcome: 'ERROR', status_code: 500 })])
  })

  it('leaves no available document nor a success record when the upload fails at its commit', async () => {
    const id = requestId(ROLLED_BACK)
    const title = `Rolled back ${id}`
    const response = await upload(title, id)
    expect(response.statusCode).toBe(500)
    const documents = await app.db
      .selectFrom('documents')
      .select('status')
      .where('title', '=', title)
      .execute()
    expect(documents).toEqual([])
    expect(await recordsOf(id)).toEqual([expect.objectContaining({ outcome: 'ERROR', status_code: 500 })])
  })

  it('leaves neither the vital signs nor a success record when recording them fails at the commit', async () => {
    const id = requestId(ROLLED_BACK)
    const response = await app.inject({
      method: 'POST',
      url: `/api/patients/${patientId}/vitals`,
      headers: { ...bearer(provider.token), 'x-request-id': id },
      payload: { systolic: 121, diastolic: 79 },
    })
    expect(response.statusCode).toBe(500)
    const vitals = await app.db
      .selectFrom('clinical_records')
      .select('id')
      .where('patient_id', '=', patientId)
      .where('kind', '=', 'VITAL_SIGNS')
      .execute()
    expect(vitals).toEqual([])
    expect(await recordsOf(id)).toEqual([expect.objectContaining({ outcome: 'ERROR', status_code: 500 })])
  })

  it('answers an error and registers no patient when the record cannot be written', async () => {
    const id = requestId(FAILING)
    const patientsBefore = await patientCount()
    const response = await registration(id)
    expect(response.statusCode).toBe(500)
    expect(await patientCount()).toBe(patientsBefore)
    const names = await app.db
      .selectFrom('audit_log')
      .select('resource_ids')
      .where('request_id', '=', id)
      .execute()
    expect(names).toEqual([{ resource_ids: [] }])
  })
})
