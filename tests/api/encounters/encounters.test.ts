import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { buildTestApp } from '../../helpers/app.js'
import {
  bearer,
  createPatient,
  daysFromToday,
  encounterNote,
  newOrganization,
  type TestUser,
} from '../../helpers/factories.js'
import { booked, type Clinic, newClinic, newPractice, outboxEvents } from '../../helpers/scheduling.js'

let app: App

beforeAll(async () => {
  app = await buildTestApp()
})
afterAll(async () => {
  await app.close()
})

const TODAY = daysFromToday(0)
const note = encounterNote()

const create = (user: TestUser, payload: object) =>
  app.inject({ method: 'POST', url: '/api/encounters', headers: bearer(user.token), payload })

async function draft(clinic: Clinic, extra: object = {}) {
  const response = await create(clinic.doctor, {
    patientId: clinic.patient.id,
    providerId: clinic.provider.id,
    ...note,
    ...extra,
  })
  expect(response.statusCode, response.body).toBe(201)
  return response.json().data
}

const action = (user: TestUser, id: number, path: string, payload?: object) =>
  app.inject({
    method: path === '' ? 'PUT' : 'POST',
    url: `/api/encounters/${id}${path}`,
    headers: bearer(user.token),
    ...(payload ? { payload } : {}),
  })

describe('POST /api/encounters', () => {
  it('returns 201 DRAFT with the SOAP note and writes encounter.created without clinical text', async () => {
    const clinic = await newClinic(app)
    const encounter = await draft(clinic)
    expect(encounter).toMatchObject({
      patientId: clinic.patient.id,
      providerId: clinic.provider.id,
      appointmentId: null,
      encounterDate: TODAY,
      encounterType: 'OFFICE_VISIT',
      chiefComplaint: 'Headache',
      soapNote: note.soapNote,
      status: 'DRAFT',
      signedBy: null,
      signedAt: null,
      addenda: [],
    })
    const last = (await outboxEvents(app, clinic.org.id)).at(-1)
    expect(last?.event_type).toBe('encounter.created')
    expect(last?.payload.data).toEqual({
      id: encounter.id,
      patientId: clinic.patient.id,
      providerId: clinic.provider.id,
      appointmentId: null,
      encounterDate: TODAY,
      encounterType: 'OFFICE_VISIT',
      status: 'DRAFT',
    })
  })

  it('documents an appointment at most once; a second encounter is 409 and writes no event', async () => {
    const clinic = await newClinic(app)
    const appointment = await booked(app, clinic, daysFromToday(3), '10:00:00')
    await draft(clinic, { appointmentId: appointment.id })
    const before = await outboxEvents(app, clinic.org.id)
    const again = await create(clinic.doctor, {
      patientId: clinic.patient.id,
      providerId: clinic.provider.id,
      appointmentId: appointment.id,
      ...note,
    })
    expect(again.statusCode).toBe(409)
    expect(again.json().error).toEqual({
      code: 'RES_002',
      details: 'The appointment already has an encounter',
      fields: [{ path: 'appointmentId', message: 'already has an encounter' }],
    })
    expect(await outboxEvents(app, clinic.org.id)).toEqual(before)
  })

  it('checks the appointment: same patient and provider (422), not cancelled (409)', async () => {
    const clinic = await newClinic(app)
    const otherPatient = await createPatient(app, clinic.nurse)
    const appointment = await booked(app, clinic, daysFromToday(3), '10:00:00')
    const mismatch = await create(clinic.doctor, {
      patientId: otherPatient,
      providerId: clinic.provider.id,
      appointmentId: appointment.id,
      ...note,
    })
    expect(mismatch.statusCode).toBe(422)
    expect(mismatch.json().error.details).toBe(
      'appointmentId is an appointment of another patient or provider',
    )
    await app.inject({
      method: 'POST',
      url: `/api/appointments/${appointment.id}/cancel`,
      headers: bearer(clinic.nurse.token),
    })
    const cancelled = await create(clinic.doctor, {
      patientId: clinic.patient.id,
      providerId: clinic.provider.id,
      appointmentId: appointment.id,
      ...note,
    })
    expect(cancelled.statusCode).toBe(409)
    expect(cancelled.json().error.details).toBe('The appointment is CANCELLED and cannot have an encounter')
  })

  it.each([
    ['a code without the dot', 'G44209'],
    ['a lower-case code', 'g44.209'],
    ['a code starting with a digit', '144.2'],
    ['too many characters after the dot', 'S72.001AB'],
    ['a dot without characters', 'I10.'],
  ])('returns 422 for %s', async (_label, icd10Code) => {
    const clinic = await newClinic(app)
    const response = await create(clinic.doctor, {
      patientId: clinic.patient.id,
      providerId: clinic.provider.id,
      ...note,
      soapNote: { assessment: { diagnoses: [{ icd10Code, description: 'x' }] } },
    })
    expect(response.statusCode).toBe(422)
    expect(response.json().error.details).toContain('soapNote.assessment.diagnoses.0.icd10Code')
  })

  it('accepts ICD-10 codes of every shape', async () => {
    const clinic = await newClinic(app)
    const diagnoses = ['I10', 'E11.9', 'J45.909', 'S72.001A', 'U07.1', 'Z00.00'].map((icd10Code) => ({
      icd10Code,
      description: 'x',
    }))
    const encounter = await draft(clinic, { soapNote: { assessment: { diagnoses } } })
    expect(encounter.soapNote.assessment.diagnoses).toEqual(diagnoses)
  })

  it('is written by PROVIDER only: 403 for NURSE and ADMIN', async () => {
    const clinic = await newClinic(app)
    for (const user of [clinic.nurse, clinic.admin]) {
      const response = await create(user, {
        patientId: clinic.patient.id,
        providerId: clinic.provider.id,
        ...note,
      })
      expect(response.statusCode).toBe(403)
    }
  })
})

describe('the note’s lifecycle', () => {
  it('edits a draft, signs it (signer and time recorded), then only takes addenda', async () => {
    const clinic = await newClinic(app)
    const encounter = await draft(clinic)
    const edited = await action(clinic.doctor, encounter.id, '', { ...note, chiefComplaint: 'Migraine' })
    expect(edited.statusCode).toBe(200)
    expect(edited.json().data).toMatchObject({ chiefComplaint: 'Migraine', status: 'DRAFT' })

    const signed = await action(clinic.doctor, encounter.id, '/sign')
    expect(signed.statusCode).toBe(200)
    expect(signed.json().data).toMatchObject({ status: 'SIGNED', signedBy: clinic.doctor.id })
    expect(Date.parse(signed.json().data.signedAt)).toBeGreaterThan(Date.now() - 60_000)

    const locked = await action(clinic.doctor, encounter.id, '', { ...note, chiefComplaint: 'Changed' })
    expect(locked.statusCode).toBe(409)
    expect(locked.json().error.details).toBe(
      'The encounter is SIGNED and cannot be edited; only DRAFT ones can (add an addendum to a signed note)',
    )

    const first = await action(clinic.doctor, encounter.id, '/addendum', { text: 'Labs normal' })
    expect(first.statusCode).toBe(200)
    const colleague = await clinic.org.user('PROVIDER')
    const second = await action(colleague, encounter.id, '/addendum', { text: 'Reviewed' })
    expect(second.statusCode).toBe(200)
    const final = second.json().data
    expect(final).toMatchObject({
      status: 'AMENDED',
      chiefComplaint: 'Migraine',
      soapNote: edited.json().data.soapNote,
      signedBy: clinic.doctor.id,
      signedAt: signed.json().data.signedAt,
    })
    expect(final.addenda.map((a: { text: string; signedBy: number }) => [a.text, a.signedBy])).toEqual([
      ['Labs normal', clinic.doctor.id],
      ['Reviewed', colleague.id],
    ])
    const nurse = await app.inject({
      url: `/api/encounters/${encounter.id}`,
      headers: bearer(clinic.nurse.token),
    })
    expect(nurse.json().data).toEqual(final)
  })

  it('returns 409 for every operation its status does not allow', async () => {
    const clinic = await newClinic(app)
    const encounter = await draft(clinic)
    const early = await action(clinic.doctor, encounter.id, '/addendum', { text: 'Too early' })
    expect(early.statusCode).toBe(409)
    expect(early.json().error.details).toBe(
      'The encounter is DRAFT and cannot be given an addendum; only SIGNED or AMENDED ones can',
    )
    await action(clinic.doctor, encounter.id, '/sign')
    const twice = await action(clinic.doctor, encounter.id, '/sign')
    expect(twice.statusCode).toBe(409)
    expect(twice.json().error.details).toBe(
      'The encounter is SIGNED and cannot be signed; only DRAFT ones can',
    )
    await action(clinic.doctor, encounter.id, '/addendum', { text: 'Note' })
    for (const [path, payload] of [
      ['', note],
      ['/sign', undefined],
    ] as const) {
      const response = await action(clinic.doctor, encounter.id, path, payload)
      expect(response.statusCode, path).toBe(409)
      expect(response.json().error.details).toMatch(
        /^The encounter is AMENDED and cannot be (edited|signed);/,
      )
    }
  })

  it('lets only the linked provider sign; any provider signs when none is linked', async () => {
    const clinic = await newClinic(app)
    const encounter = await draft(clinic)
    const colleague = await clinic.org.user('PROVIDER')
    const denied = await action(colleague, encounter.id, '/sign')
    expect(denied.statusCode).toBe(403)
    expect(denied.json().error.details).toBe('Only the encounter’s provider may sign it')
    const unlinked = await newPractice(app)
    const anyDoctor = await unlinked.org.user('PROVIDER')
    const created = await create(anyDoctor, {
      patientId: unlinked.patient.id,
      providerId: unlinked.provider.id,
      ...note,
    })
    expect((await action(anyDoctor, created.json().data.id, '/sign')).statusCode).toBe(200)
  })

  it('is enforced by the database too: a signed note’s text cannot be updated', async () => {
    const clinic = await newClinic(app)
    const encounter = await draft(clinic)
    await action(clinic.doctor, encounter.id, '/sign')
    await expect(
      sql`update encounters set subjective = 'rewritten' where id = ${encounter.id}`.execute(app.db),
    ).rejects.toMatchObject({ code: '55000' })
  })
})

describe('GET /api/encounters', () => {
  it('lists with filters, newest first by default; NURSE may read, ADMIN not', async () => {
    const clinic = await newClinic(app)
    const older = await draft(clinic, { encounterDate: daysFromToday(-10) })
    const newer = await draft(clinic, { encounterDate: daysFromToday(-1), encounterType: 'TELEHEALTH' })
    await action(clinic.doctor, newer.id, '/sign')
    await draft(await newClinic(app))
    const list = async (query: string) => {
      const response = await app.inject({
        url: `/api/encounters?${query}`,
        headers: bearer(clinic.nurse.token),
      })
      expect(response.statusCode, query).toBe(200)
      return response.json().data.content.map((e: { id: number }) => e.id)
    }
    expect(await list('')).toEqual([newer.id, older.id])
    expect(await list('sort=encounterDate,asc')).toEqual([older.id, newer.id])
    expect(await list('status=SIGNED')).toEqual([newer.id])
    expect(await list('encounterType=TELEHEALTH')).toEqual([newer.id])
    expect(await list(`dateTo=${daysFromToday(-5)}&patientId=${clinic.patient.id}`)).toEqual([older.id])
    const admin = await app.inject({ url: '/api/encounters', headers: bearer(clinic.admin.token) })
    expect(admin.statusCode).toBe(403)
  })
})

describe('another organization’s encounter', () => {
  it('is 403 AUTH_003 on every encounter route, a missing one 404, and nothing changes', async () => {
    const clinic = await newClinic(app)
    const encounter = await draft(clinic)
    const outsider = await (await newOrganization(app)).user('PROVIDER', 'NURSE')
    const requests = (id: number) => [
      app.inject({ url: `/api/encounters/${id}`, headers: bearer(outsider.token) }),
      action(outsider, id, '', note),
      action(outsider, id, '/sign'),
      action(outsider, id, '/addendum', { text: 'x' }),
    ]
    for (const response of await Promise.all(requests(encounter.id))) {
      expect(response.statusCode, response.body).toBe(403)
      expect(response.json().error).toEqual({
        code: 'AUTH_003',
        details: 'The encounter belongs to another organization',
      })
    }
    for (const response of await Promise.all(requests(2_000_000_000))) expect(response.statusCode).toBe(404)
    const foreignRefs = await create(outsider, {
      patientId: clinic.patient.id,
      providerId: clinic.provider.id,
      ...note,
    })
    expect(foreignRefs.statusCode).toBe(403)
    const reread = await app.inject({
      url: `/api/encounters/${encounter.id}`,
      headers: bearer(clinic.doctor.token),
    })
    expect(reread.json().data).toEqual(encounter)
  })
})

describe('audit trail', () => {
  it('records encounter creation, reads, signing and addenda by id', async () => {
    const clinic = await newClinic(app)
    const encounter = await draft(clinic)
    await app.inject({ url: `/api/encounters/${encounter.id}`, headers: bearer(clinic.nurse.token) })
    await action(clinic.doctor, encounter.id, '/sign')
    await action(clinic.doctor, encounter.id, '/addendum', { text: 'x' })
    await app.auditLog.flush()
    const rows = await app.db
      .selectFrom('audit_log')
      .select(['action', 'outcome', 'resource_ids'])
      .where('organization_id', '=', clinic.org.id)
      .where('resource_type', '=', 'encounter')
      .orderBy('id')
      .execute()
    expect(rows.map((r) => [r.action, r.outcome, r.resource_ids])).toEqual([
      ['CREATE', 'SUCCESS', [encounter.id]],
      ['READ', 'SUCCESS', [encounter.id]],
      ['SIGN', 'SUCCESS', [encounter.id]],
      ['AMEND', 'SUCCESS', [encounter.id]],
    ])
  })
})
