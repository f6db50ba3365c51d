import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fillPatientNameWords } from '../../../db/migrations/0015_patient_name_words.js'
import type { App } from '../../../src/app.js'
import { buildTestApp } from '../../helpers/app.js'
import {
  bearer,
  newOrganization,
  patientBody,
  type TestOrganization,
  type TestUser,
} from '../../helpers/factories.js'

let app: App

beforeAll(async () => {
  app = await buildTestApp()
})
afterAll(async () => {
  await app.close()
})

async function createPatient(user: TestUser, body: object = patientBody(), on: App = app) {
  const response = await on.inject({
    method: 'POST',
    url: '/api/patients',
    headers: bearer(user.token),
    payload: body,
  })
  expect(response.statusCode).toBe(201)
  return response.json().data
}

describe('POST /api/patients', () => {
  it('returns 201 with the grouped patient, a generated MRN and status ACTIVE', async () => {
    const org = await newOrganization(app)
    const nurse = await org.user('NURSE')
    const response = await app.inject({
      method: 'POST',
      url: '/api/patients',
      headers: bearer(nurse.token),
      payload: patientBody({
        identification: {
          firstName: 'Ana',
          middleName: 'Maria',
          lastName: 'Silva',
          dateOfBirth: '1990-02-28',
          gender: 'Female',
        },
        contact: {
          email: 'ana@example.com',
          phoneNumber: '+351 21 000 0000',
          address: { street: '1 Main St', city: 'Lisbon', postalCode: '1000-001', country: 'PT' },
        },
        emergencyContact: { name: 'João Silva', relationship: 'Spouse', phoneNumber: '+351 91 000 0000' },
        preferredLanguage: 'pt-PT',
      }),
    })
    expect(response.statusCode).toBe(201)
    const body = response.json()
    expect(body).toMatchObject({ success: true, message: 'Patient created' })
    expect(body.data).toMatchObject({
      status: 'ACTIVE',
      identification: { firstName: 'Ana', middleName: 'Maria', lastName: 'Silva', dateOfBirth: '1990-02-28' },
      contact: { email: 'ana@example.com', address: { city: 'Lisbon', country: 'PT', state: null } },
      emergencyContact: { name: 'João Silva', relationship: 'Spouse' },
      preferredLanguage: 'pt-PT',
    })
    expect(body.data.mrn).toMatch(/^MRN\d{8}$/)
    expect(Number.isInteger(body.data.id)).toBe(true)
  })

  it('returns 409 RES_002 when the MRN already exists in the organization', async () => {
    const org = await newOrganization(app)
    const provider = await org.user('PROVIDER')
    await createPatient(provider, patientBody({ mrn: 'A-100' }))
    const response = await app.inject({
      method: 'POST',
      url: '/api/patients',
      headers: bearer(provider.token),
      payload: patientBody({ mrn: 'A-100' }),
    })
    expect(response.statusCode).toBe(409)
    expect(response.json()).toEqual({
      success: false,
      message: 'Resource already exists',
      error: {
        code: 'RES_002',
        details: 'A patient with this MRN already exists in this organization',
        fields: [{ path: 'mrn', message: 'is already used by another patient of this organization' }],
      },
    })
  })

  it('accepts the same MRN in two different organizations', async () => {
    const first = await (await newOrganization(app)).user('PROVIDER')
    const second = await (await newOrganization(app)).user('PROVIDER')
    const a = await createPatient(first, patientBody({ mrn: 'SHARED-1' }))
    const b = await createPatient(second, patientBody({ mrn: 'SHARED-1' }))
    expect(a.mrn).toBe('SHARED-1')
    expect(b.mrn).toBe('SHARED-1')
  })

  it('writes patient.created to the outbox in the same transaction', async () => {
    const org = await newOrganization(app)
    const patient = await createPatient(await org.user('PROVIDER'))
    const events = await app.db
      .selectFrom('outbox_events')
      .select(['event_type', 'payload'])
      .where('organization_id', '=', org.id)
      .execute()
    expect(events).toHaveLength(1)
    expect(events[0]?.event_type).toBe('patient.created')
    expect(events[0]?.payload).toMatchObject({
      event: 'patient.created',
      data: { id: patient.id, mrn: patient.mrn, status: 'ACTIVE', deleted: false },
    })
    expect(new Date(events[0]?.payload.timestamp ?? '').toISOString()).toBe(events[0]?.payload.timestamp)
  })

  it('writes no outbox event when the insert fails', async () => {
    const org = await newOrganization(app)
    const provider = await org.user('PROVIDER')
    await createPatient(provider, patientBody({ mrn: 'ONCE' }))
    await app.inject({
      method: 'POST',
      url: '/api/patients',
      headers: bearer(provider.token),
      payload: patientBody({ mrn: 'ONCE' }),
    })
    const count = await app.db
      .selectFrom('outbox_events')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('organization_id', '=', org.id)
      .executeTakeFirstOrThrow()
    expect(Number(count.n)).toBe(1)
  })

  it.each([
    ['an impossible date', { dateOfBirth: '2023-02-30' }, 'VAL_001', 'identification.dateOfBirth'],
    ['a future birth date', { dateOfBirth: '2999-01-01' }, 'VAL_001', 'identification.dateOfBirth'],
    ['a birth date before 1900', { dateOfBirth: '1899-12-31' }, 'VAL_001', 'identification.dateOfBirth'],
    ['an unknown gender', { gender: 'Robot' }, 'VAL_001', 'identification.gender'],
    ['a blank first name', { firstName: '   ' }, 'VAL_001', 'identification.firstName'],
    ['a number as name', { lastName: 42 }, 'VAL_001', 'identification.lastName'],
  ])('returns 422 for %s', async (_label, change, code, field) => {
    const provider = await (await newOrganization(app)).user('PROVIDER')
    const body = patientBody()
    const response = await app.inject({
      method: 'POST',
      url: '/api/patients',
      headers: bearer(provider.token),
      payload: { ...body, identification: { ...body.identification, ...change } },
    })
    expect(response.statusCode).toBe(422)
    expect(response.json().error.code).toBe(code)
    expect(response.json().error.details).toContain(field)
  })

  it('returns 422 VAL_002 naming a missing required field', async () => {
    const provider = await (await newOrganization(app)).user('PROVIDER')
    const response = await app.inject({
      method: 'POST',
      url: '/api/patients',
      headers: bearer(provider.token),
      payload: { identification: { firstName: 'A', dateOfBirth: '1990-01-01', gender: 'Male' } },
    })
    expect(response.statusCode).toBe(422)
    expect(response.json().error).toEqual({
      code: 'VAL_002',
      details: 'identification.lastName is required',
      fields: [{ path: 'identification.lastName', message: 'is required' }],
    })
  })

  it('returns 422 for an invalid e-mail and for an unknown field', async () => {
    const provider = await (await newOrganization(app)).user('PROVIDER')
    const badEmail = await app.inject({
      method: 'POST',
      url: '/api/patients',
      headers: bearer(provider.token),
      payload: patientBody({ contact: { email: 'not-an-email' } }),
    })
    expect(badEmail.statusCode).toBe(422)
    expect(badEmail.json().error.details).toContain('contact.email')
    const misspelled = await app.inject({
      method: 'POST',
      url: '/api/patients',
      headers: bearer(provider.token),
      payload: patientBody({ allergie: 'peanuts' }),
    })
    expect(misspelled.statusCode).toBe(422)
    expect(misspelled.json().error).toEqual({
      code: 'VAL_001',
      details: 'allergie is not a known field',
      fields: [{ path: 'allergie', message: 'is not a known field' }],
    })
  })

  it('returns 400 for malformed JSON, 415 for a non-JSON body and 413 for an oversized body', async () => {
    const provider = await (await newOrganization(app)).user('PROVIDER')
    const headers = { ...bearer(provider.token), 'content-type': 'application/json' }
    const malformed = await app.inject({
      method: 'POST',
      url: '/api/patients',
      headers,
      payload: '{"identification": {',
    })
    expect(malformed.statusCode).toBe(400)
    expect(malformed.json().error.code).toBe('VAL_001')

    const text = await app.inject({
      method: 'POST',
      url: '/api/patients',
      headers: { ...bearer(provider.token), 'content-type': 'text/plain' },
      payload: 'hello',
    })
    expect(text.statusCode).toBe(415)
    expect(text.json()).toMatchObject({ success: false, error: { code: 'VAL_001' } })

    const huge = await app.inject({
      method: 'POST',
      url: '/api/patients',
      headers,
      payload: JSON.stringify({ padding: 'x'.repeat(2 * 1024 * 1024) }),
    })
    expect(huge.statusCode).toBe(413)
    expect(huge.json()).toMatchObject({ success: false, error: { code: 'VAL_001' } })
  })

  it('returns 403 AUTH_003 for a role that may not register patients', async () => {
    const billing = await (await newOrganization(app)).user('BILLING')
    const response = await app.inject({
      method: 'POST',
      url: '/api/patients',
      headers: bearer(billing.token),
      payload: patientBody(),
    })
    expect(response.statusCode).toBe(403)
    expect(response.json().error.code).toBe('AUTH_003')
  })
})

describe('the front desk (FRONT_DESK) and patient demographics', () => {
  it('registers a patient (201), replaces (PUT) and patches (PATCH) the demographics (200)', async () => {
    const desk = await (await newOrganization(app)).user('FRONT_DESK')
    const created = await createPatient(desk)
    const replaced = await app.inject({
      method: 'PUT',
      url: `/api/patients/${created.id}`,
      headers: bearer(desk.token),
      payload: {
        identification: created.identification,
        contact: { email: 'new.address@example.com', phoneNumber: '+1 555 010 9999' },
      },
    })
    expect(replaced.statusCode, replaced.body).toBe(200)
    expect(replaced.json().data.contact).toMatchObject({ email: 'new.address@example.com' })
    const patched = await app.inject({
      method: 'PATCH',
      url: `/api/patients/${created.id}`,
      headers: { ...bearer(desk.token), 'content-type': 'application/merge-patch+json' },
      payload: { preferredLanguage: 'es' },
    })
    expect(patched.statusCode, patched.body).toBe(200)
    expect(patched.json().data.preferredLanguage).toBe('es')
  })

  it('returns 403 AUTH_003 for the full list and for deleting, which the specification gives to others', async () => {
    const desk = await (await newOrganization(app)).user('FRONT_DESK')
    const created = await createPatient(desk)
    const list = await app.inject({ url: '/api/patients', headers: bearer(desk.token) })
    expect(list.statusCode).toBe(403)
    const removed = await app.inject({
      method: 'DELETE',
      url: `/api/patients/${created.id}`,
      headers: bearer(desk.token),
    })
    expect(removed.statusCode).toBe(403)
    expect(removed.json().error.code).toBe('AUTH_003')
  })
})

describe('GET /api/patients/{id}', () => {
  it('returns 200 with the patient for a user of the same organization', async () => {
    const org = await newOrganization(app)
    const created = await createPatient(await org.user('PROVIDER'))
    const frontDesk = await org.user('FRONT_DESK')
    const response = await app.inject({
      url: `/api/patients/${created.id}`,
      headers: bearer(frontDesk.token),
    })
    expect(response.statusCode).toBe(200)
    expect(response.json().data).toEqual(created)
  })

  it("returns 403 AUTH_003 for another organization's user", async () => {
    const created = await createPatient(await (await newOrganization(app)).user('PROVIDER'))
    const outsider = await (await newOrganization(app)).user('PROVIDER', 'ADMIN')
    const response = await app.inject({ url: `/api/patients/${created.id}`, headers: bearer(outsider.token) })
    expect(response.statusCode).toBe(403)
    expect(response.json()).toMatchObject({ success: false, error: { code: 'AUTH_003' } })
    expect(response.body).not.toContain(created.identification.lastName)
  })

  it('returns 404 RES_001 for an id that does not exist and 400 for a malformed id', async () => {
    const provider = await (await newOrganization(app)).user('PROVIDER')
    const missing = await app.inject({ url: '/api/patients/2000000000', headers: bearer(provider.token) })
    expect(missing.statusCode).toBe(404)
    expect(missing.json().error.code).toBe('RES_001')
    for (const id of ['abc', '0', '-1', '1.5', '99999999999']) {
      const malformed = await app.inject({ url: `/api/patients/${id}`, headers: bearer(provider.token) })
      expect(malformed.statusCode, id).toBe(400)
      expect(malformed.json().error.code).toBe('VAL_001')
    }
  })
})

describe('GET /api/patients/{id} under concurrent reads', () => {
  let quiet: App
  beforeAll(async () => {
    quiet = await buildTestApp()
  })
  afterAll(async () => {
    await quiet.close()
  })

  const lastAuditId = async () =>
    Number(
      (
        await quiet.db
          .selectFrom('audit_log')
          .select((eb) => eb.fn.max('id').as('id'))
          .executeTakeFirstOrThrow()
      ).id ?? 0,
    )
  // An insert's rows share their recorded_at, the time its statement began.
  const auditInsertsAfter = async (id: number) =>
    (await quiet.db.selectFrom('audit_log').select('recorded_at').distinct().where('id', '>', id).execute())
      .length
  const queriesSoFar = async () => {
    const scrape = (await quiet.inject({ url: '/actuator/prometheus' })).body
    return Number(/^ehr_db_query_duration_seconds_count\{outcome="ok"\} (\d+)/m.exec(scrape)?.[1])
  }

  it('answers reads arriving together with a query per organization, each caller seeing only its own', async () => {
    const [first, second] = [await newOrganization(quiet), await newOrganization(quiet)]
    const [firstUser, secondUser] = [await first.user('PROVIDER'), await second.user('PROVIDER')]
    const firstPatients = [
      await createPatient(firstUser, patientBody(), quiet),
      await createPatient(firstUser, patientBody(), quiet),
    ]
    const secondPatient = await createPatient(secondUser, patientBody(), quiet)
    // The callers' accounts are looked up (and cached) before the measured reads.
    await quiet.inject({ url: `/api/patients/${firstPatients[0].id}`, headers: bearer(firstUser.token) })
    await quiet.inject({ url: `/api/patients/${secondPatient.id}`, headers: bearer(secondUser.token) })
    const reads = [
      ...Array.from({ length: 8 }, (_, i) => [firstUser, firstPatients[i % 2]] as const),
      ...Array.from({ length: 8 }, () => [secondUser, secondPatient] as const),
      [secondUser, firstPatients[0]] as const,
      [firstUser, secondPatient] as const,
    ]
    const auditedBefore = await lastAuditId()
    const before = await queriesSoFar()
    const responses = await Promise.all(
      reads.map(([user, patient]) =>
        quiet.inject({ url: `/api/patients/${patient.id}`, headers: bearer(user.token) }),
      ),
    )
    // The reads' audit records, which each read waits for, are written by inserts of their own.
    const queries = (await queriesSoFar()) - before - (await auditInsertsAfter(auditedBefore))
    expect(responses.slice(0, 16).map((response) => response.json().data)).toEqual(
      reads.slice(0, 16).map(([, patient]) => patient),
    )
    // Another organization's patient stays hidden though it was read in the same moment.
    for (const refused of responses.slice(16)) {
      expect(refused.statusCode).toBe(403)
      expect(refused.json().error.code).toBe('AUTH_003')
    }
    // 18 reads: one query per organization for the reads and the two refusals' ownership checks;
    // besides, each of the two scrapes makes one query (for the backlog gauges) that prom-client
    // collects beside the counter, so it is counted in its own scrape or only in the next one.
    // One query per read would be 20 or more.
    expect(queries).toBeLessThanOrEqual(6)
  })
})

describe('PUT /api/patients/{id}', () => {
  it('replaces the record, keeps the MRN when omitted and emits patient.updated', async () => {
    const org = await newOrganization(app)
    const nurse = await org.user('NURSE')
    const created = await createPatient(nurse, patientBody({ preferredLanguage: 'en' }))
    const response = await app.inject({
      method: 'PUT',
      url: `/api/patients/${created.id}`,
      headers: bearer(nurse.token),
      payload: {
        identification: { ...created.identification, middleName: undefined, lastName: 'Married' },
        status: 'INACTIVE',
      },
    })
    expect(response.statusCode).toBe(200)
    const updated = response.json().data
    expect(updated).toMatchObject({
      id: created.id,
      mrn: created.mrn,
      status: 'INACTIVE',
      identification: { lastName: 'Married' },
      contact: { email: null, phoneNumber: null },
      preferredLanguage: null,
    })
    expect(Date.parse(updated.updatedAt)).toBeGreaterThanOrEqual(Date.parse(created.updatedAt))
    const events = await app.db
      .selectFrom('outbox_events')
      .select('event_type')
      .where('organization_id', '=', org.id)
      .orderBy('id')
      .execute()
    expect(events.map((e) => e.event_type)).toEqual(['patient.created', 'patient.updated'])
  })

  it.each([
    ['PUT', 'application/json'],
    ['PATCH', 'application/merge-patch+json'],
  ])(
    'returns 409 naming the mrn field, and no database identifier, when %s changes the MRN to one already used',
    async (method, contentType) => {
      const provider = await (await newOrganization(app)).user('PROVIDER')
      await createPatient(provider, patientBody({ mrn: 'TAKEN' }))
      const other = await createPatient(provider)
      const response = await app.inject({
        method: method as 'PUT' | 'PATCH',
        url: `/api/patients/${other.id}`,
        headers: { ...bearer(provider.token), 'content-type': contentType },
        payload: method === 'PUT' ? { identification: other.identification, mrn: 'TAKEN' } : { mrn: 'TAKEN' },
      })
      expect(response.statusCode).toBe(409)
      expect(response.json().error).toEqual({
        code: 'RES_002',
        details: 'A patient with this MRN already exists in this organization',
        fields: [{ path: 'mrn', message: 'is already used by another patient of this organization' }],
      })
      expect(response.body).not.toMatch(/patients_|_key|organization_id/)
    },
  )

  it("returns 403 for another organization's patient and leaves it unchanged", async () => {
    const owner = await (await newOrganization(app)).user('PROVIDER')
    const created = await createPatient(owner)
    const outsider = await (await newOrganization(app)).user('PROVIDER')
    const response = await app.inject({
      method: 'PUT',
      url: `/api/patients/${created.id}`,
      headers: bearer(outsider.token),
      payload: { identification: { ...created.identification, lastName: 'Hijacked' } },
    })
    expect(response.statusCode).toBe(403)
    const reread = await app.inject({ url: `/api/patients/${created.id}`, headers: bearer(owner.token) })
    expect(reread.json().data.identification.lastName).toBe(created.identification.lastName)
  })
})

describe('DELETE /api/patients/{id}', () => {
  it('is ADMIN only: 403 for a provider, 200 for an admin, then 404 on read', async () => {
    const org = await newOrganization(app)
    const provider = await org.user('PROVIDER')
    const admin = await org.user('ADMIN')
    const created = await createPatient(provider)
    const denied = await app.inject({
      method: 'DELETE',
      url: `/api/patients/${created.id}`,
      headers: bearer(provider.token),
    })
    expect(denied.statusCode).toBe(403)
    const deleted = await app.inject({
      method: 'DELETE',
      url: `/api/patients/${created.id}`,
      headers: bearer(admin.token),
    })
    expect(deleted.statusCode).toBe(200)
    expect(deleted.json()).toEqual({ success: true, message: 'Patient deleted', data: { id: created.id } })
    const read = await app.inject({ url: `/api/patients/${created.id}`, headers: bearer(provider.token) })
    expect(read.statusCode).toBe(404)
    const again = await app.inject({
      method: 'DELETE',
      url: `/api/patients/${created.id}`,
      headers: bearer(admin.token),
    })
    expect(again.statusCode).toBe(404)
  })

  it('keeps the row (soft delete), reserves the MRN and emits patient.updated with deleted=true', async () => {
    const org = await newOrganization(app)
    const admin = await org.user('ADMIN', 'PROVIDER')
    const created = await createPatient(admin, patientBody({ mrn: 'KEEP-1' }))
    await app.inject({ method: 'DELETE', url: `/api/patients/${created.id}`, headers: bearer(admin.token) })
    const row = await app.db
      .selectFrom('patients')
      .select(['deleted_at', 'deleted_by'])
      .where('id', '=', created.id)
      .executeTakeFirst()
    expect(row?.deleted_at).toBeInstanceOf(Date)
    expect(row?.deleted_by).toBe(admin.id)
    const reuse = await app.inject({
      method: 'POST',
      url: '/api/patients',
      headers: bearer(admin.token),
      payload: patientBody({ mrn: 'KEEP-1' }),
    })
    expect(reuse.statusCode).toBe(409)
    const last = await app.db
      .selectFrom('outbox_events')
      .select('payload')
      .where('organization_id', '=', org.id)
      .orderBy('id', 'desc')
      .executeTakeFirstOrThrow()
    expect(last.payload).toMatchObject({ event: 'patient.updated', data: { id: created.id, deleted: true } })
  })

  it("returns 403 for another organization's admin", async () => {
    const created = await createPatient(await (await newOrganization(app)).user('PROVIDER'))
    const outsider = await (await newOrganization(app)).user('ADMIN')
    const response = await app.inject({
      method: 'DELETE',
      url: `/api/patients/${created.id}`,
      headers: bearer(outsider.token),
    })
    expect(response.statusCode).toBe(403)
  })
})

describe('GET /api/patients', () => {
  let org: TestOrganization
  let provider: TestUser

  beforeAll(async () => {
    org = await newOrganization(app)
    provider = await org.user('PROVIDER')
    const people = [
      ['Zoe', 'adams', '1970-01-01', 'Female', 'ACTIVE'],
      ['Yann', 'Baker', '1980-05-05', 'Male', 'ACTIVE'],
      ['Xia', 'Chen', '1990-09-09', 'Female', 'INACTIVE'],
      ['Will', 'Baker', '2000-12-12', 'Male', 'ACTIVE'],
      ['Vera', 'Diaz', '2010-03-03', 'Other', 'DECEASED'],
    ]
    for (const [firstName, lastName, dateOfBirth, gender, status] of people) {
      await createPatient(provider, { identification: { firstName, lastName, dateOfBirth, gender }, status })
    }
    // Another organization's patient with a colliding name must never appear.
    await createPatient(await (await newOrganization(app)).user('PROVIDER'), {
      identification: { firstName: 'Yann', lastName: 'Baker', dateOfBirth: '1980-05-05', gender: 'Male' },
    })
  })

  const list = (query: string, user = provider) =>
    app.inject({ url: `/api/patients?${query}`, headers: bearer(user.token) })

  it('returns the spec page shape, sorted by last name case-insensitively', async () => {
    const response = await list('size=2&sort=lastName,asc')
    expect(response.statusCode).toBe(200)
    const page = response.json().data
    expect(page).toMatchObject({
      pageable: { pageNumber: 0, pageSize: 2 },
      totalElements: 5,
      totalPages: 3,
      first: true,
      last: false,
    })
    expect(
      page.content.map((p: { identification: { lastName: string } }) => p.identification.lastName),
    ).toEqual(['adams', 'Baker'])
  })

  it('pages through to the last page and past it', async () => {
    const last = (await list('size=2&page=2&sort=lastName,desc')).json().data
    expect(last).toMatchObject({ totalElements: 5, first: false, last: true })
    expect(
      last.content.map((p: { identification: { lastName: string } }) => p.identification.lastName),
    ).toEqual(['adams'])
    const beyond = (await list('size=2&page=7')).json().data
    expect(beyond).toMatchObject({ content: [], totalElements: 5, totalPages: 3, last: true })
  })

  it('filters by status, gender, last name and date of birth', async () => {
    const active = (await list('status=ACTIVE')).json().data
    expect(active.totalElements).toBe(3)
    const bakers = (await list('lastName=BAKER&sort=firstName,asc')).json().data
    expect(
      bakers.content.map((p: { identification: { firstName: string } }) => p.identification.firstName),
    ).toEqual(['Will', 'Yann'])
    const born = (await list('dateOfBirth=1990-09-09&gender=Female')).json().data
    expect(born.content).toHaveLength(1)
    expect(born.content[0].identification.firstName).toBe('Xia')
  })

  it.each([
    ['size=101', 'size'],
    ['size=0', 'size'],
    ['page=-1', 'page'],
    ['sort=password,asc', 'sort'],
    ['sort=lastName,sideways', 'sort'],
    ['status=ALIVE', 'status'],
    ['dateOfBirth=2023-02-30', 'dateOfBirth'],
    ['favouriteColour=blue', 'favouriteColour'],
  ])('returns 400 VAL_001 for %s', async (query, field) => {
    const response = await list(query)
    expect(response.statusCode).toBe(400)
    expect(response.json().error.code).toBe('VAL_001')
    expect(response.json().error.details).toContain(field)
  })

  it('returns 403 for roles other than PROVIDER and NURSE', async () => {
    for (const role of ['ADMIN', 'FRONT_DESK', 'BILLING', 'PATIENT'] as const) {
      const user = await org.user(role)
      const response = await list('', user)
      expect(response.statusCode, role).toBe(403)
      expect(response.json().error.code).toBe('AUTH_003')
    }
    const nurse = await org.user('NURSE')
    expect((await list('', nurse)).statusCode).toBe(200)
  })
})

describe('GET /api/patients/search', () => {
  it('matches name, e-mail, phone digits and MRN case-insensitively within the organization', async () => {
    const org = await newOrganization(app)
    const provider = await org.user('PROVIDER')
    const created = await createPatient(provider, {
      identification: {
        firstName: 'Olga',
        lastName: 'Petrova-Smith',
        dateOfBirth: '1975-04-04',
        gender: 'Female',
      },
      contact: { email: 'olga.p@example.org', phoneNumber: '+1 (617) 555-0199' },
      mrn: 'ZX-9981',
    })
    await createPatient(provider, {
      identification: { firstName: 'Ivan', lastName: 'Petrov', dateOfBirth: '1970-01-01', gender: 'Male' },
    })
    await createPatient(await (await newOrganization(app)).user('PROVIDER'), {
      identification: {
        firstName: 'Olga',
        lastName: 'Petrova-Smith',
        dateOfBirth: '1975-04-04',
        gender: 'Female',
      },
    })
    for (const q of [
      'olga',
      'PETROVA',
      'olga smith',
      'OLGA.P@EXAMPLE',
      '617-555-0199',
      '5550199',
      'zx-998',
      'smith 617-555-0199',
      'olga petrova zx-998',
    ]) {
      const response = await app.inject({
        url: `/api/patients/search?q=${encodeURIComponent(q)}`,
        headers: bearer(provider.token),
      })
      expect(response.statusCode, q).toBe(200)
      const ids = response.json().data.content.map((p: { id: number }) => p.id)
      expect(ids, q).toEqual([created.id])
    }
    const both = await app.inject({
      url: '/api/patients/search?q=petrov&sort=firstName,asc',
      headers: bearer(provider.token),
    })
    expect(both.json().data.totalElements).toBe(2)
  })

  it('treats LIKE wildcards in the query as literal text', async () => {
    const org = await newOrganization(app)
    const provider = await org.user('PROVIDER')
    await createPatient(provider)
    for (const q of ['%', '_', '\\']) {
      const response = await app.inject({
        url: `/api/patients/search?q=${encodeURIComponent(q)}`,
        headers: bearer(provider.token),
      })
      expect(response.statusCode).toBe(200)
      expect(response.json().data.totalElements, q).toBe(0)
    }
  })

  it('returns 200 to every staff role, FRONT_DESK included, and 403 AUTH_003 to PATIENT and USER', async () => {
    const org = await newOrganization(app)
    const created = await createPatient(
      await org.user('FRONT_DESK'),
      patientBody({
        identification: {
          firstName: 'Kofi',
          lastName: 'Mensah-Desk',
          dateOfBirth: '1988-08-08',
          gender: 'Male',
        },
      }),
    )
    const search = (user: TestUser) =>
      app.inject({ url: '/api/patients/search?q=mensah-desk', headers: bearer(user.token) })
    for (const role of ['FRONT_DESK', 'BILLING', 'ADMIN', 'NURSE', 'PROVIDER'] as const) {
      const response = await search(await org.user(role))
      expect(response.statusCode, role).toBe(200)
      expect(
        response.json().data.content.map((p: { id: number }) => p.id),
        role,
      ).toEqual([created.id])
    }
    for (const role of ['PATIENT', 'USER'] as const) {
      const response = await search(await org.user(role))
      expect(response.statusCode, role).toBe(403)
      expect(response.json().error.code, role).toBe('AUTH_003')
    }
  })

  it('returns 400 VAL_002 without q and 400 for a blank q', async () => {
    const provider = await (await newOrganization(app)).user('PROVIDER')
    const missing = await app.inject({ url: '/api/patients/search', headers: bearer(provider.token) })
    expect(missing.statusCode).toBe(400)
    expect(missing.json().error.code).toBe('VAL_002')
    const blank = await app.inject({ url: '/api/patients/search?q=%20%20', headers: bearer(provider.token) })
    expect(blank.statusCode).toBe(400)
  })
})

describe('GET /api/patients/search by name words', () => {
  const person = (firstName: string, lastName: string, middleName?: string) =>
    patientBody({
      identification: { firstName, middleName, lastName, dateOfBirth: '1980-02-02', gender: 'Other' },
    })

  async function found(user: TestUser, q: string) {
    const response = await app.inject({
      url: `/api/patients/search?q=${encodeURIComponent(q)}&sort=firstName,asc`,
      headers: bearer(user.token),
    })
    expect(response.statusCode, q).toBe(200)
    const page = response.json().data
    const names = page.content.map(
      (p: { identification: { firstName: string; lastName: string } }) =>
        `${p.identification.firstName} ${p.identification.lastName}`,
    )
    expect(page.totalElements, q).toBe(names.length)
    return names
  }

  it('matches words that begin name words, in any order, each word of q on a word of its own', async () => {
    const org = await newOrganization(app)
    const provider = await org.user('PROVIDER')
    await createPatient(provider, person('Olga', 'Kowalski'))
    await createPatient(provider, person('Anna', 'Kowalska', 'Maria'))
    await createPatient(provider, person('Annabel', 'Ann-Smith'))
    await createPatient(provider, person('Łukasz', "O'Brien"))
    await createPatient(provider, person('Olgierd', 'Nowak'))
    await createPatient(await (await newOrganization(app)).user('PROVIDER'), person('Olga', 'Kowalski'))

    expect(await found(provider, 'kowalski olga')).toEqual(['Olga Kowalski'])
    expect(await found(provider, 'OLGA KOWALSKI')).toEqual(['Olga Kowalski'])
    expect(await found(provider, 'kowal ol')).toEqual(['Olga Kowalski'])
    expect(await found(provider, 'kowal')).toEqual(['Anna Kowalska', 'Olga Kowalski'])
    expect(await found(provider, 'olg')).toEqual(['Olga Kowalski', 'Olgierd Nowak'])
    expect(await found(provider, 'walski')).toEqual([])
    expect(await found(provider, 'anna maria kowalska')).toEqual(['Anna Kowalska'])
    expect(await found(provider, 'maria kowalska olga')).toEqual([])
    // "ann" is implied by "anna"; otherwise two words of q need two words of the name.
    expect(await found(provider, 'ann anna')).toEqual(['Anna Kowalska', 'Annabel Ann-Smith'])
    expect(await found(provider, 'anna kowalska kowalska')).toEqual(['Anna Kowalska'])
    expect(await found(provider, 'olga olgierd')).toEqual([])
    expect(await found(provider, 'ann smith')).toEqual(['Annabel Ann-Smith'])
    expect(await found(provider, 'ann')).toEqual(['Anna Kowalska', 'Annabel Ann-Smith'])
    expect(await found(provider, 'ann annabel')).toEqual(['Annabel Ann-Smith'])
    expect(await found(provider, "łukasz o'brien")).toEqual(["Łukasz O'Brien"])
    expect(await found(provider, 'ŁUK brien')).toEqual(["Łukasz O'Brien"])
  })

  it('follows renames and deletions, and pages large name matches with exact totals', async () => {
    const org = await newOrganization(app)
    const admin = await org.user('ADMIN', 'PROVIDER')
    const created = await createPatient(admin, person('Teodor', 'Quistgaard'))
    const renamed = await app.inject({
      method: 'PUT',
      url: `/api/patients/${created.id}`,
      headers: bearer(admin.token),
      payload: { identification: { ...created.identification, lastName: 'Vinterberg' } },
    })
    expect(renamed.statusCode).toBe(200)
    expect(await found(admin, 'teodor quist')).toEqual([])
    expect(await found(admin, 'teodor vinter')).toEqual(['Teodor Vinterberg'])
    await app.inject({ method: 'DELETE', url: `/api/patients/${created.id}`, headers: bearer(admin.token) })
    expect(await found(admin, 'teodor')).toEqual([])

    await sql`
      insert into patients (organization_id, first_name, last_name, date_of_birth, gender)
      select ${org.id}, 'Sigrid' || chr(97 + i % 3), 'Halvorsen', date '1980-01-01', 'Other'
      from generate_series(1, 60) as i`.execute(app.db)
    const page = await app.inject({
      url: '/api/patients/search?q=halvorsen%20sigridb&size=7&page=2&sort=firstName,asc',
      headers: bearer(admin.token),
    })
    expect(page.json().data).toMatchObject({ totalElements: 20, totalPages: 3 })
    expect(page.json().data.content).toHaveLength(6)
  })

  it('finds the same patients after the name words are rebuilt in bulk', async () => {
    const org = await newOrganization(app)
    const provider = await org.user('PROVIDER')
    await createPatient(provider, person('Brygida', 'Zielonka', 'Ewa'))
    const before = await found(provider, 'ewa zielon bry')
    await app.db.deleteFrom('patient_name_words').where('organization_id', '=', org.id).execute()
    expect(await found(provider, 'ewa zielon bry')).toEqual([])
    await fillPatientNameWords(app.db, org.id)
    expect(await found(provider, 'ewa zielon bry')).toEqual(before)
    expect(before).toEqual(['Brygida Zielonka'])
  })
})

describe('audit trail', () => {
  it('records who read, listed, created and was denied, with ids and request ids but no PHI', async () => {
    const org = await newOrganization(app)
    const provider = await org.user('PROVIDER')
    const created = await createPatient(provider)
    await app.inject({
      url: `/api/patients/${created.id}`,
      headers: { ...bearer(provider.token), 'x-request-id': 'audit-read-1' },
    })
    await app.inject({ url: '/api/patients', headers: bearer(provider.token) })
    const outsider = await (await newOrganization(app)).user('PROVIDER')
    await app.inject({ url: `/api/patients/${created.id}`, headers: bearer(outsider.token) })
    await app.auditLog.flush()

    const rows = await app.db
      .selectFrom('audit_log')
      .selectAll()
      .where((eb) => eb(eb.val(created.id), '=', eb.fn.any('resource_ids')))
      .orderBy('id')
      .execute()
    expect(rows.map((r) => [r.action, r.outcome, r.user_id])).toEqual([
      ['CREATE', 'SUCCESS', provider.id],
      ['READ', 'SUCCESS', provider.id],
      ['LIST', 'SUCCESS', provider.id],
      ['READ', 'DENIED', outsider.id],
    ])
    expect(rows[1]).toMatchObject({
      request_id: 'audit-read-1',
      organization_id: org.id,
      resource_type: 'patient',
    })
    expect(JSON.stringify(rows)).not.toContain(created.identification.lastName)
  })
})

describe('list totals', () => {
  it('stay exact through registration, status changes and deletion', async () => {
    const org = await newOrganization(app)
    const admin = await org.user('ADMIN', 'PROVIDER')
    const total = async (query = '') =>
      (await app.inject({ url: `/api/patients?${query}`, headers: bearer(admin.token) })).json().data
        .totalElements
    const ids: number[] = []
    for (let i = 0; i < 4; i++) ids.push((await createPatient(admin)).id)
    expect(await total()).toBe(4)
    const first = (await app.inject({ url: `/api/patients/${ids[0]}`, headers: bearer(admin.token) })).json()
      .data
    await app.inject({
      method: 'PUT',
      url: `/api/patients/${ids[0]}`,
      headers: bearer(admin.token),
      payload: { identification: first.identification, status: 'INACTIVE' },
    })
    expect([await total(), await total('status=ACTIVE'), await total('status=INACTIVE')]).toEqual([4, 3, 1])
    await app.inject({ method: 'DELETE', url: `/api/patients/${ids[1]}`, headers: bearer(admin.token) })
    expect([await total(), await total('status=ACTIVE'), await total('status=DECEASED')]).toEqual([3, 2, 0])
    const list = (await app.inject({ url: '/api/patients?size=2', headers: bearer(admin.token) })).json().data
    expect(list).toMatchObject({ totalElements: 3, totalPages: 2 })
    expect(list.content).toHaveLength(2)
  })
})

describe('large result sets', () => {
  it('searches and filters thousands of matches with exact totals, in order, and past the end', async () => {
    const org = await newOrganization(app)
    const admin = await org.user('ADMIN', 'PROVIDER')
    const count = 5200
    // Straight into the table: thousands of API calls would only slow the test down.
    await sql`
      insert into patients (organization_id, first_name, last_name, date_of_birth, gender, status)
      select ${org.id}, 'Many', 'Zebulon' || lpad(i::text, 5, '0'), date '1980-01-01', 'Other', 'ACTIVE'
      from generate_series(1, ${count}) as i`.execute(app.db)
    for (const url of [
      '/api/patients/search?q=zebulon&size=5',
      '/api/patients?firstName=Many&size=5&sort=lastName,asc',
    ]) {
      const page = (await app.inject({ url, headers: bearer(admin.token) })).json().data
      expect(page.totalElements).toBe(count)
      expect(
        page.content.map((p: { identification: { lastName: string } }) => p.identification.lastName),
      ).toEqual(['Zebulon00001', 'Zebulon00002', 'Zebulon00003', 'Zebulon00004', 'Zebulon00005'])
      const past = (await app.inject({ url: `${url}&page=2000`, headers: bearer(admin.token) })).json().data
      expect(past).toMatchObject({ totalElements: count, content: [], last: true })
    }
    const few = (
      await app.inject({ url: '/api/patients/search?q=zebulon05199', headers: bearer(admin.token) })
    ).json().data
    expect(few.totalElements).toBe(1)
    expect(few.content[0].identification.lastName).toBe('Zebulon05199')
  })
})
