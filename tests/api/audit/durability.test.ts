import type { LightMyRequestResponse } from 'fastify'
import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { buildTestApp } from '../../helpers/app.js'
import { ASYNC, kickOff } from '../../helpers/bulk-export.js'
import {
  bearer,
  createPatient,
  newOrganization,
  patientBody,
  type TestOrganization,
  type TestUser,
} from '../../helpers/factories.js'
import { multipart } from '../../helpers/multipart.js'
import { RECORDS_WEBHOOK_HOST, recordsResolver } from '../../helpers/records.js'
import { createProvider } from '../../helpers/scheduling.js'
import { createPatientAs, registerWebhook } from '../../helpers/webhooks.js'

let app: App
let organization: TestOrganization
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
  app = await buildTestApp({ AUDIT_FLUSH_INTERVAL_MS: '60000' }, undefined, { resolveHost: recordsResolver })
  await sql`create function refuse_audit() returns trigger language plpgsql as $$
    begin raise exception 'audit refused'; end $$`.execute(app.db)
  await sql`create trigger refuse_audit before insert on audit_log for each row
    when (new.request_id like ${sql.lit(`${FAILING}%`)} and new.status_code < 400)
    execute function refuse_audit()`.execute(app.db)
  await sql`create constraint trigger fail_at_commit after insert on audit_log
    deferrable initially deferred for each row
    when (new.request_id like ${sql.lit(`${ROLLED_BACK}%`)} and new.outcome = 'SUCCESS')
    execute function refuse_audit()`.execute(app.db)
  organization = await newOrganization(app)
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

/** The records of a call answered 503, which does not wait for its record to be written. */
async function unavailableRecordsOf(id: string) {
  await app.auditLog.flush()
  return recordsOf(id)
}

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

  it('answers concurrent reads with every record stored, none of them still awaited by the next insert', async () => {
    const ids = Array.from({ length: 12 }, () => requestId())
    const responses = await Promise.all(
      ids.map((id, i) =>
        app.inject({
          url: i % 3 === 2 ? `/api/patients/${patientId + 1_000_000}` : `/api/patients/${patientId}`,
          headers: { ...bearer(provider.token), 'x-request-id': id },
        }),
      ),
    )
    expect(responses.map((response) => response.statusCode)).toEqual(
      ids.map((_, i) => (i % 3 === 2 ? 404 : 200)),
    )
    const stored = await Promise.all(ids.map((id) => recordsOf(id)))
    expect(stored.map((records) => records.length)).toEqual(ids.map(() => 1))
    expect(app.auditLog.expecting).toBe(0)
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
    // What was answered goes on record: an error, not a read.
    expect(await unavailableRecordsOf(id)).toEqual([
      expect.objectContaining({ outcome: 'ERROR', status_code: 503 }),
    ])
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
    await app.auditLog.flush()
    const names = await app.db
      .selectFrom('audit_log')
      .select('resource_ids')
      .where('request_id', '=', id)
      .execute()
    expect(names).toEqual([{ resource_ids: [] }])
  })
})

/** A call as `user`, under the request id `id`. */
const send = (
  user: TestUser,
  method: 'POST' | 'PUT' | 'PATCH' | 'DELETE',
  url: string,
  id: string,
  payload?: object,
) =>
  app.inject({
    method,
    url,
    headers: {
      ...bearer(user.token),
      'x-request-id': id,
      ...(method === 'PATCH' ? { 'content-type': 'application/merge-patch+json' } : {}),
    },
    ...(payload ? { payload } : {}),
  })

/**
 * Makes a call whose transaction fails at its commit if it holds the call's success record: with
 * the record in the change's transaction, the change is undone and the call answered 500, leaving
 * only its ERROR record. (A record written after the change, on its own, would fail alone: the
 * change would stand and the call be answered 503.)
 */
async function rolledBack(call: (id: string) => Promise<LightMyRequestResponse>): Promise<void> {
  const id = requestId(ROLLED_BACK)
  const response = await call(id)
  expect(response.statusCode, response.body).toBe(500)
  expect(await recordsOf(id)).toEqual([expect.objectContaining({ outcome: 'ERROR', status_code: 500 })])
}

/** Makes a call that succeeds with `status`, and returns its answer once its one record is checked. */
async function recorded(
  call: (id: string) => Promise<LightMyRequestResponse>,
  status: number,
  ids: (response: LightMyRequestResponse) => number[],
): Promise<LightMyRequestResponse> {
  const id = requestId()
  const response = await call(id)
  expect(response.statusCode, response.body).toBe(status)
  expect(await recordsOf(id)).toEqual([
    expect.objectContaining({ outcome: 'SUCCESS', status_code: status, resource_ids: ids(response) }),
  ])
  return response
}

const idOf = (response: LightMyRequestResponse): number[] => [response.json().data.id]

describe('the audit record of sending and reading a message', () => {
  let nurse: TestUser

  beforeAll(async () => {
    nurse = await organization.user('NURSE')
  })

  const sent = (id: string, subject = 'Lab follow-up') =>
    send(provider, 'POST', '/api/messages', id, { recipientId: nurse.id, subject, body: 'Please call back' })

  it('returns 201 to POST /api/messages with one CREATE record of the message', async () => {
    await recorded(sent, 201, idOf)
  })

  it('leaves no message when sending it fails at the commit', async () => {
    const subject = `Rolled back ${requestId()}`
    await rolledBack((id) => sent(id, subject))
    expect(await app.db.selectFrom('messages').select('id').where('subject', '=', subject).execute()).toEqual(
      [],
    )
  })

  it('leaves the message unread when marking it read fails at the commit', async () => {
    const message = idOf(await recorded(sent, 201, idOf))[0] as number
    await rolledBack((id) => send(nurse, 'PUT', `/api/messages/${message}/read`, id))
    const row = await app.db
      .selectFrom('messages')
      .select('read_at')
      .where('id', '=', message)
      .executeTakeFirst()
    expect(row).toEqual({ read_at: null })
    await recorded(
      (id) => send(nurse, 'PUT', `/api/messages/${message}/read`, id),
      200,
      () => [message],
    )
  })
})

describe('the audit record of a change of an account', () => {
  let practice: TestOrganization
  let admin: TestUser

  beforeAll(async () => {
    practice = await newOrganization(app)
    admin = await practice.user('ADMIN')
  })

  const account = async (id: number) =>
    app.db.selectFrom('users').select(['first_name', 'active']).where('id', '=', id).executeTakeFirstOrThrow()
  const invitation = (email: string) => ({
    email,
    firstName: 'Mary',
    lastName: 'Seacole',
    roles: ['NURSE'],
    invite: 'temporaryPassword',
  })

  it('returns 201 to POST /api/users with one CREATE record of the account', async () => {
    await recorded((id) => send(admin, 'POST', '/api/users', id, invitation(`${id}@example.test`)), 201, idOf)
  })

  it('creates no account when the invitation fails at the commit', async () => {
    const email = `${requestId()}@example.test`
    await rolledBack((id) => send(admin, 'POST', '/api/users', id, invitation(email)))
    expect(await app.db.selectFrom('users').select('id').where('email', '=', email).execute()).toEqual([])
  })

  it('leaves the account as it was when PUT or PATCH /api/users/{id} fails at the commit', async () => {
    const nurse = await practice.user('NURSE')
    const body = { firstName: 'Renamed', lastName: 'User', roles: ['NURSE'] }
    await rolledBack((id) => send(admin, 'PUT', `/api/users/${nurse.id}`, id, body))
    await rolledBack((id) => send(admin, 'PATCH', `/api/users/${nurse.id}`, id, { firstName: 'Renamed' }))
    expect(await account(nurse.id)).toEqual({ first_name: 'Test', active: true })
    await recorded(
      (id) => send(admin, 'PUT', `/api/users/${nurse.id}`, id, body),
      200,
      () => [nurse.id],
    )
  })

  it('leaves the account active, or inactive, when deactivating or reactivating it fails at the commit', async () => {
    const nurse = await practice.user('NURSE')
    await rolledBack((id) => send(admin, 'POST', `/api/users/${nurse.id}/deactivate`, id))
    expect(await account(nurse.id)).toMatchObject({ active: true })
    await recorded(
      (id) => send(admin, 'POST', `/api/users/${nurse.id}/deactivate`, id),
      200,
      () => [nurse.id],
    )
    await rolledBack((id) => send(admin, 'POST', `/api/users/${nurse.id}/reactivate`, id))
    expect(await account(nurse.id)).toMatchObject({ active: false })
  })

  it('stores no reset link when POST /api/users/{id}/reset-password fails at the commit', async () => {
    const nurse = await practice.user('NURSE')
    await rolledBack((id) => send(admin, 'POST', `/api/users/${nurse.id}/reset-password`, id))
    await app.background.settled()
    const links = await app.db
      .selectFrom('password_reset_tokens')
      .select('user_id')
      .where('user_id', '=', nurse.id)
      .execute()
    expect(links).toEqual([])
  })
})

describe('the audit record of a change of a client', () => {
  let admin: TestUser

  beforeAll(async () => {
    admin = await (await newOrganization(app)).user('ADMIN')
  })

  const registration = (id: string, name = 'Billing sync') =>
    send(admin, 'POST', '/api/clients', id, { name, roles: ['BILLING'] })
  const client = async (id: number) =>
    app.db
      .selectFrom('clients')
      .innerJoin('users', 'users.id', 'clients.user_id')
      .select(['users.first_name', 'users.active', 'clients.secret_hash'])
      .where('clients.id', '=', id)
      .executeTakeFirstOrThrow()

  it('returns 201 to POST /api/clients with one CREATE record of the client', async () => {
    await recorded(registration, 201, idOf)
  })

  it('registers no client when the registration fails at the commit', async () => {
    const name = `Rolled back ${requestId()}`
    await rolledBack((id) => registration(id, name))
    const clients = await app.db
      .selectFrom('users')
      .select('id')
      .where('first_name', '=', name)
      .where('kind', '=', 'SERVICE')
      .execute()
    expect(clients).toEqual([])
  })

  it('leaves the client as it was when a change of it fails at the commit', async () => {
    const id = idOf(await recorded(registration, 201, idOf))[0] as number
    const before = await client(id)
    const path = `/api/clients/${id}`
    await rolledBack((request) => send(admin, 'PUT', path, request, { name: 'Renamed', roles: ['BILLING'] }))
    await rolledBack((request) => send(admin, 'PATCH', path, request, { name: 'Renamed' }))
    await rolledBack((request) => send(admin, 'POST', `${path}/rotate-secret`, request))
    await rolledBack((request) => send(admin, 'POST', `${path}/deactivate`, request))
    expect(await client(id)).toEqual(before)
    await recorded(
      (request) => send(admin, 'POST', `${path}/deactivate`, request),
      200,
      () => [id],
    )
    await rolledBack((request) => send(admin, 'POST', `${path}/reactivate`, request))
    expect(await client(id)).toEqual({ ...before, active: false })
  })
})

describe('the audit record of a change of a webhook', () => {
  const HOOK_URL = `https://${RECORDS_WEBHOOK_HOST}/ehr`
  let practice: TestOrganization
  let admin: TestUser

  beforeAll(async () => {
    practice = await newOrganization(app)
    admin = await practice.user('ADMIN')
  })

  const webhook = (id: number) =>
    app.db
      .selectFrom('webhooks')
      .select(['url', 'active', 'secret', 'version'])
      .where('id', '=', id)
      .executeTakeFirst()
  const deliveries = (webhookId: number) =>
    app.db
      .selectFrom('webhook_deliveries')
      .select(['event_type', 'status'])
      .where('webhook_id', '=', webhookId)
      .orderBy('id')
      .execute()

  it('returns 201 to POST /api/webhooks with one CREATE record of the webhook', async () => {
    await recorded(
      (id) => send(admin, 'POST', '/api/webhooks', id, { url: HOOK_URL, events: ['*'] }),
      201,
      idOf,
    )
  })

  it('registers no webhook when the registration fails at the commit', async () => {
    const url = `${HOOK_URL}/${requestId()}`
    await rolledBack((id) => send(admin, 'POST', '/api/webhooks', id, { url, events: ['*'] }))
    expect(await app.db.selectFrom('webhooks').select('id').where('url', '=', url).execute()).toEqual([])
  })

  it('leaves the webhook as it was when a change of it fails at the commit', async () => {
    const { id } = await registerWebhook(app, admin, { url: HOOK_URL })
    const before = await webhook(id)
    const path = `/api/webhooks/${id}`
    const other = { url: `${HOOK_URL}/other`, events: ['patient.created'] }
    await rolledBack((request) => send(admin, 'PUT', path, request, other))
    await rolledBack((request) => send(admin, 'PATCH', path, request, { active: false }))
    await rolledBack((request) => send(admin, 'POST', `${path}/rotate-secret`, request, {}))
    await rolledBack((request) => send(admin, 'DELETE', path, request))
    expect(await webhook(id)).toEqual(before)
    await recorded(
      (request) => send(admin, 'PUT', path, request, other),
      200,
      () => [id],
    )
  })

  it('queues no delivery when a test event or a redelivery fails at the commit', async () => {
    const { id } = await registerWebhook(app, admin, { url: HOOK_URL, events: ['patient.created'] })
    const registrar = await practice.user('FRONT_DESK')
    await createPatientAs(app, registrar, patientBody())
    const [delivery] = await app.db
      .updateTable('webhook_deliveries')
      .set({ status: 'FAILED' })
      .where('webhook_id', '=', id)
      .returning('id')
      .execute()
    await rolledBack((request) => send(admin, 'POST', `/api/webhooks/${id}/test`, request))
    await rolledBack((request) =>
      send(admin, 'POST', `/api/webhooks/${id}/deliveries/${delivery?.id}/redeliver`, request),
    )
    expect(await deliveries(id)).toEqual([{ event_type: 'patient.created', status: 'FAILED' }])
    await recorded(
      (request) => send(admin, 'POST', `/api/webhooks/${id}/test`, request),
      201,
      () => [id],
    )
  })
})

describe('the audit record of opening and closing a telehealth room', () => {
  let practice: TestOrganization
  let admin: TestUser
  let nurse: TestUser

  beforeAll(async () => {
    practice = await newOrganization(app)
    admin = await practice.user('ADMIN')
    nurse = await practice.user('NURSE')
  })

  /** The parties of an ad hoc visit of their own. */
  const visit = async () => ({
    providerId: (await createProvider(app, admin)).id,
    patientId: await createPatient(app, nurse),
  })
  const open = (parties: object) => (id: string) => send(nurse, 'POST', '/api/telehealth/rooms', id, parties)
  const roomsOf = (parties: { providerId: number }) =>
    app.db
      .selectFrom('telehealth_rooms')
      .select(['id', 'status'])
      .where('provider_id', '=', parties.providerId)
      .execute()

  it('opens no room when opening it fails at the commit, then returns 201 with one CREATE record', async () => {
    const parties = await visit()
    await rolledBack(open(parties))
    expect(await roomsOf(parties)).toEqual([])
    const created = await recorded(open(parties), 201, idOf)
    // The room exists: answered 200, recorded at the answer.
    await recorded(open(parties), 200, () => idOf(created))
  })

  it('leaves the room open when closing it fails at the commit', async () => {
    const parties = await visit()
    const [id] = idOf(await recorded(open(parties), 201, idOf))
    const close = (request: string) => send(nurse, 'POST', `/api/telehealth/rooms/${id}/close`, request)
    await rolledBack(close)
    expect(await roomsOf(parties)).toEqual([{ id, status: 'OPEN' }])
    await recorded(close, 200, () => [id as number])
  })
})

describe('the audit record of issuing and voiding an invoice', () => {
  const draft = async () => {
    const response = await send(biller, 'POST', '/api/billing/invoices', requestId(), {
      patientId,
      dueDate: '2026-12-31',
      lineItems: [{ code: '99213', description: 'Visit', quantity: 1, unitPrice: 100 }],
      issue: false,
    })
    expect(response.statusCode).toBe(201)
    return response.json().data.id as number
  }
  const status = async (id: number) =>
    (await app.db.selectFrom('invoices').select('status').where('id', '=', id).executeTakeFirstOrThrow())
      .status

  it('leaves the invoice a draft when issuing or voiding it fails at the commit', async () => {
    const id = await draft()
    await rolledBack((request) => send(biller, 'POST', `/api/billing/invoices/${id}/issue`, request))
    await rolledBack((request) => send(biller, 'POST', `/api/billing/invoices/${id}/void`, request))
    expect(await status(id)).toBe('DRAFT')
    await recorded(
      (request) => send(biller, 'POST', `/api/billing/invoices/${id}/issue`, request),
      200,
      () => [id],
    )
  })
})

describe('the audit record of starting and cancelling a FHIR bulk export', () => {
  const exportsOf = (user: TestUser) =>
    app.db.selectFrom('bulk_exports').select('id').where('requested_by', '=', user.id).execute()
  const start = (id: string) =>
    app.inject({
      url: '/fhir/R4/Patient/$export',
      headers: { ...bearer(provider.token), ...ASYNC, 'x-request-id': id },
    })

  it('starts no export when the kick-off fails at the commit', async () => {
    const before = await exportsOf(provider)
    await rolledBack(start)
    expect(await exportsOf(provider)).toEqual(before)
  })

  it('returns 202 to a kick-off with one CREATE record naming the caller', async () => {
    const id = requestId()
    expect((await start(id)).statusCode).toBe(202)
    const records = await app.db
      .selectFrom('audit_log')
      .select(['user_id', 'organization_id', 'action', 'resource_type', 'status_code'])
      .where('request_id', '=', id)
      .execute()
    expect(records).toEqual([
      {
        user_id: provider.id,
        organization_id: provider.organizationId,
        action: 'CREATE',
        resource_type: 'bulk-export',
        status_code: 202,
      },
    ])
  })

  it('keeps the export when cancelling it fails at the commit', async () => {
    const started = await kickOff(app, provider, '/Patient/$export')
    expect(started.statusCode).toBe(202)
    const status = new URL(String(started.headers['content-location'])).pathname
    await rolledBack((id) =>
      app.inject({
        method: 'DELETE',
        url: status,
        headers: { ...bearer(provider.token), 'x-request-id': id },
      }),
    )
    expect((await app.inject({ url: status, headers: bearer(provider.token) })).statusCode).toBe(202)
  })
})
