import type { Appointment, Bundle, Encounter, OperationOutcome, Practitioner } from '@medplum/fhirtypes'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { VISIT_TYPE_SYSTEM } from '../../../src/modules/fhir/appointment.js'
import { buildTestApp } from '../../helpers/app.js'
import { bearer, createPatient, daysFromToday, type TestUser } from '../../helpers/factories.js'
import { expectFhir, fhirGet, matchIds, smartToken } from '../../helpers/fhir.js'
import { booked, type Clinic, createProvider, newClinic, newPractice } from '../../helpers/scheduling.js'

let app: App

beforeAll(async () => {
  app = await buildTestApp()
})
afterAll(async () => {
  await app.close()
})

const get = (user: TestUser | string, path: string, headers: Record<string, string> = {}) =>
  fhirGet(app, user, path, headers)

/** Walks next links from `path` to the end; the ids of every page's matches, in order. */
async function allPages(user: TestUser | string, path: string): Promise<number[]> {
  const seen: number[] = []
  let url: string | undefined = `/fhir/R4${path}`
  for (let page = 0; url && page < 10; page++) {
    const response = await app.inject({ url, headers: bearer(typeof user === 'string' ? user : user.token) })
    expect(response.statusCode).toBe(200)
    const bundle = expectFhir(response) as Bundle
    expect(bundle.entry?.filter((entry) => entry.search?.mode === 'match').length ?? 0).toBeLessThanOrEqual(2)
    seen.push(...matchIds(bundle))
    const next = bundle.link?.find((link) => link.relation === 'next')?.url
    url = next ? next.slice(next.indexOf('/fhir/R4')) : undefined
  }
  return seen
}

async function expectSearches(user: TestUser | string, type: string, cases: [string, number[]][]) {
  for (const [query, expected] of cases) {
    const response = await get(user, `/${type}?${query}`)
    expect(response.statusCode, query).toBe(200)
    const bundle = expectFhir(response) as Bundle
    expect(bundle.type).toBe('searchset')
    expect(matchIds(bundle), query).toEqual(expected)
  }
}

async function expectOutcomes(cases: [string, string, number, string][]) {
  for (const [token, path, status, code] of cases) {
    const response = await get(token, path)
    expect(response.statusCode, path).toBe(status)
    expect((expectFhir(response) as OperationOutcome).issue?.[0]?.code, path).toBe(code)
  }
}

describe('GET /fhir/R4/metadata', () => {
  it('names Practitioner, Appointment and Encounter with their search parameters', async () => {
    const response = await app.inject({ url: '/fhir/R4/metadata' })
    expect(response.statusCode).toBe(200)
    const statement = expectFhir(response) as unknown as {
      rest: { resource: { type: string; searchParam: { name: string }[] }[] }[]
    }
    const params = (type: string) =>
      statement.rest[0]?.resource.find((resource) => resource.type === type)?.searchParam.map((p) => p.name)
    expect(params('Practitioner')).toEqual(
      expect.arrayContaining(['_id', 'identifier', 'name', '_lastUpdated']),
    )
    expect(params('Appointment')).toEqual(
      expect.arrayContaining(['patient', 'practitioner', 'date', 'status', '_lastUpdated']),
    )
    expect(params('Encounter')).toEqual(
      expect.arrayContaining(['patient', 'date', 'status', 'class', 'type', '_lastUpdated']),
    )
  })
})

describe('GET /fhir/R4/Practitioner', () => {
  it('returns the provider with NPI, name, telecom and qualifications, an ETag, 304 and the current _history', async () => {
    const { org, admin, nurse } = await newPractice(app)
    const provider = await createProvider(app, admin, {
      firstName: 'Rosalind',
      lastName: 'Franklin',
      title: 'MD',
      specialty: 'Internal Medicine',
      npi: '1234567893',
      email: 'rfranklin@clinic.example',
      phoneNumber: '+1 555 010 2000',
    })
    const response = await get(nurse, `/Practitioner/${provider.id}`)
    expect(response.statusCode).toBe(200)
    expect(expectFhir(response)).toEqual({
      resourceType: 'Practitioner',
      id: String(provider.id),
      meta: {
        versionId: '1',
        lastUpdated: expect.any(String),
        profile: ['http://hl7.org/fhir/us/core/StructureDefinition/us-core-practitioner|6.1.0'],
      },
      extension: [{ url: 'http://hl7.org/fhir/StructureDefinition/timezone', valueCode: 'UTC' }],
      identifier: [{ system: 'http://hl7.org/fhir/sid/us-npi', value: '1234567893' }],
      active: true,
      name: [{ use: 'official', family: 'Franklin', given: ['Rosalind'], suffix: ['MD'] }],
      telecom: [
        { system: 'email', value: 'rfranklin@clinic.example', use: 'work' },
        { system: 'phone', value: '+1 555 010 2000', use: 'work' },
      ],
      qualification: [{ code: { text: 'MD' } }, { code: { text: 'Internal Medicine' } }],
    })
    expect(response.headers.etag).toBe('W/"1"')
    expect((await get(nurse, `/Practitioner/${provider.id}`, { 'if-none-match': 'W/"1"' })).statusCode).toBe(
      304,
    )
    expect((await get(nurse, `/Practitioner/${provider.id}/_history/1`)).statusCode).toBe(200)
    expect((await get(nurse, `/Practitioner/${provider.id}/_history/2`)).statusCode).toBe(404)
    // Any staff role reads providers, as in the REST API.
    const desk = await org.user('FRONT_DESK')
    expect((await get(desk, `/Practitioner/${provider.id}`)).statusCode).toBe(200)
  })

  it('leaves out what the provider does not have, and shows an inactive provider as inactive', async () => {
    const { admin, nurse } = await newPractice(app)
    const provider = await createProvider(app, admin, { title: null, specialty: null, active: false })
    const practitioner = expectFhir(await get(nurse, `/Practitioner/${provider.id}`)) as Practitioner
    expect(practitioner.active).toBe(false)
    expect(practitioner.telecom).toBeUndefined()
    expect(practitioner.qualification).toBeUndefined()
    expect(practitioner.name).toEqual([{ use: 'official', family: 'Hopper', given: ['Grace'] }])
  })

  it('answers 404 unknown, 403 another organization’s, 403 a role the REST read refuses', async () => {
    const { org, nurse } = await newPractice(app)
    const other = await newPractice(app)
    const patientUser = await org.user('PATIENT')
    await expectOutcomes([
      [nurse.token, '/Practitioner/2000000000', 404, 'not-found'],
      [nurse.token, `/Practitioner/${other.provider.id}`, 403, 'forbidden'],
      [patientUser.token, `/Practitioner/${other.provider.id}`, 403, 'forbidden'],
      [patientUser.token, '/Practitioner', 403, 'forbidden'],
    ])
  })

  it('searches by _id, identifier, name and _lastUpdated, pages to the end and counts', async () => {
    const { admin, nurse, provider: hopper } = await newPractice(app)
    const curie = await createProvider(app, admin, {
      firstName: 'Marie',
      lastName: 'Curie',
      npi: '1245319599',
    })
    const salk = await createProvider(app, admin, { firstName: 'Jonas', lastName: 'Salk' })
    await newPractice(app)
    await expectSearches(nurse, 'Practitioner', [
      ['', [hopper.id, curie.id, salk.id]],
      [`_id=${curie.id},${salk.id}`, [curie.id, salk.id]],
      ['identifier=http://hl7.org/fhir/sid/us-npi|1245319599', [curie.id]],
      ['identifier=1245319599', [curie.id]],
      ['identifier=https://other.example/ids|1245319599', []],
      ['name=cur', [curie.id]],
      ['name=JONAS', [salk.id]],
      ['name=gra,sal', [hopper.id, salk.id]],
      ['name=zzz', []],
      ['_lastUpdated=ge2000-01-01&name=curie', [curie.id]],
      ['_lastUpdated=lt2000-01-01', []],
    ])
    expect(await allPages(nurse, '/Practitioner?_count=2')).toEqual([hopper.id, curie.id, salk.id])
    const counted = expectFhir(await get(nurse, '/Practitioner?_summary=count&name=cur,sal')) as Bundle
    expect(counted.total).toBe(2)
    expect(counted.entry).toBeUndefined()
  })

  it('lets a patient/ token read and search the organization’s practitioners (not in a patient compartment)', async () => {
    const { org, nurse, provider, patient } = await newPractice(app)
    const other = await newPractice(app)
    const token = smartToken(app, org, nurse, ['patient/Practitioner.rs'], patient.id)
    expect((await get(token, `/Practitioner/${provider.id}`)).statusCode).toBe(200)
    expect((await get(token, `/Practitioner/${other.provider.id}`)).statusCode).toBe(403)
    expect(matchIds(expectFhir(await get(token, '/Practitioner')) as Bundle)).toEqual([provider.id])
    const appointmentsOnly = smartToken(app, org, nurse, ['patient/Appointment.rs'], patient.id)
    expect((await get(appointmentsOnly, `/Practitioner/${provider.id}`)).statusCode).toBe(403)
  })
})

const put = (user: TestUser, id: number, payload: object) =>
  app.inject({ method: 'PUT', url: `/api/appointments/${id}`, headers: bearer(user.token), payload })

describe('GET /fhir/R4/Appointment', () => {
  const DAY = daysFromToday(7)

  it('returns the appointment with status, instants, duration, participants, type and reason', async () => {
    const clinic = await newClinic(app)
    const appointment = await booked(app, clinic, DAY, '10:00:00', {
      appointmentType: 'FOLLOW_UP',
      duration: 45,
      reason: 'Blood pressure check',
    })
    const response = await get(clinic.nurse, `/Appointment/${appointment.id}`)
    expect(response.statusCode).toBe(200)
    expect(expectFhir(response)).toEqual({
      resourceType: 'Appointment',
      id: String(appointment.id),
      meta: { versionId: '1', lastUpdated: expect.any(String) },
      status: 'booked',
      appointmentType: {
        coding: [
          {
            system: 'http://terminology.hl7.org/CodeSystem/v2-0276',
            code: 'FOLLOWUP',
            display: 'A follow up visit',
          },
          { system: VISIT_TYPE_SYSTEM, code: 'FOLLOW_UP', display: 'Follow-up visit' },
        ],
        text: 'Follow-up visit',
      },
      reasonCode: [{ text: 'Blood pressure check' }],
      start: `${DAY}T10:00:00.000Z`,
      end: `${DAY}T10:45:00.000Z`,
      minutesDuration: 45,
      created: expect.any(String),
      participant: [
        {
          actor: { reference: `Patient/${clinic.patient.id}` },
          required: 'required',
          status: 'needs-action',
        },
        {
          actor: { reference: `Practitioner/${clinic.provider.id}` },
          required: 'required',
          status: 'accepted',
        },
      ],
    })
    expect(response.headers.etag).toBe('W/"1"')
    expect(
      (await get(clinic.nurse, `/Appointment/${appointment.id}`, { 'if-none-match': 'W/"1"' })).statusCode,
    ).toBe(304)
    expect((await get(clinic.nurse, `/Appointment/${appointment.id}/_history/1`)).statusCode).toBe(200)
    expect((await get(clinic.nurse, `/Appointment/${appointment.id}/_history/2`)).statusCode).toBe(404)
  })

  it('maps every status of the lifecycle, and the cancellation reason', async () => {
    const clinic = await newClinic(app)
    const walked = await booked(app, clinic, DAY, '09:00:00')
    const read = async (id: number) =>
      expectFhir(await get(clinic.nurse, `/Appointment/${id}`)) as Appointment
    const steps: [string, Appointment['status'], string][] = [
      ['CONFIRMED', 'booked', 'accepted'],
      ['CHECKED_IN', 'checked-in', 'accepted'],
      ['IN_PROGRESS', 'checked-in', 'accepted'],
      ['COMPLETED', 'fulfilled', 'accepted'],
    ]
    for (const [status, code, patientStatus] of steps) {
      expect((await put(clinic.nurse, walked.id, { status })).statusCode, status).toBe(200)
      const appointment = await read(walked.id)
      expect(appointment.status, status).toBe(code)
      expect(appointment.participant[0]?.status, status).toBe(patientStatus)
    }
    expect((await read(walked.id)).meta?.versionId).toBe('5')

    const missed = await booked(app, clinic, DAY, '10:00:00')
    expect((await put(clinic.nurse, missed.id, { status: 'NO_SHOW' })).statusCode).toBe(200)
    expect((await read(missed.id)).status).toBe('noshow')

    const called = await booked(app, clinic, DAY, '11:00:00', { appointmentType: 'CONSULTATION' })
    const cancelled = await app.inject({
      method: 'POST',
      url: `/api/appointments/${called.id}/cancel`,
      headers: bearer(clinic.nurse.token),
      payload: { reason: 'Patient called to cancel' },
    })
    expect(cancelled.statusCode).toBe(200)
    const appointment = await read(called.id)
    expect(appointment.status).toBe('cancelled')
    expect(appointment.cancelationReason).toEqual({ text: 'Patient called to cancel' })
    // Types with no v2-0276 code carry only the service's own.
    expect(appointment.appointmentType?.coding).toEqual([
      { system: VISIT_TYPE_SYSTEM, code: 'CONSULTATION', display: 'Consultation' },
    ])
  })

  it('answers 404 unknown, 403 another organization’s, 403 a role the REST routes refuse; the front desk reads', async () => {
    const clinic = await newClinic(app)
    const other = await newClinic(app)
    const foreign = await booked(app, other, DAY, '10:00:00')
    const mine = await booked(app, clinic, DAY, '10:00:00')
    const desk = await clinic.org.user('FRONT_DESK')
    const billing = await clinic.org.user('BILLING')
    await expectOutcomes([
      [clinic.nurse.token, '/Appointment/2000000000', 404, 'not-found'],
      [clinic.nurse.token, `/Appointment/${foreign.id}`, 403, 'forbidden'],
      [billing.token, `/Appointment/${mine.id}`, 403, 'forbidden'],
      [billing.token, '/Appointment', 403, 'forbidden'],
    ])
    // FRONT_DESK books and reschedules, so the REST routes (and FHIR with them) let it read appointments.
    expect((await get(desk, `/Appointment/${mine.id}`)).statusCode).toBe(200)
    expect((await get(desk, '/Appointment')).statusCode).toBe(200)
    expect((await get(clinic.doctor, `/Appointment/${mine.id}`)).statusCode).toBe(200)
    expect((await get(clinic.admin, '/Appointment')).statusCode).toBe(200)
  })

  it('searches by patient, practitioner, date with prefixes, status, _lastUpdated and _id; pages and counts', async () => {
    const clinic = await newClinic(app)
    const second = await createProvider(app, clinic.admin)
    const otherPatient = await createPatient(app, clinic.nurse)
    const [d1, d2, d3] = [daysFromToday(5), daysFromToday(12), daysFromToday(20)]
    const a = await booked(app, clinic, d1, '10:00:00')
    const b = await booked(app, clinic, d2, '10:00:00', { patientId: otherPatient })
    const c = await booked(app, clinic, d3, '14:30:00', { providerId: second.id })
    expect((await put(clinic.nurse, b.id, { status: 'CONFIRMED' })).statusCode).toBe(200)
    expect((await put(clinic.nurse, c.id, { status: 'NO_SHOW' })).statusCode).toBe(200)
    await booked(app, await newClinic(app), d1, '10:00:00')
    await expectSearches(clinic.nurse, 'Appointment', [
      ['', [a.id, b.id, c.id]],
      [`patient=${clinic.patient.id}`, [a.id, c.id]],
      [`patient=Patient/${otherPatient}`, [b.id]],
      [`patient=Practitioner/${otherPatient}`, []],
      [`practitioner=Practitioner/${second.id}`, [c.id]],
      [`practitioner=${clinic.provider.id}`, [a.id, b.id]],
      [`date=${d1}`, [a.id]],
      [`date=ge${d2}`, [b.id, c.id]],
      [`date=lt${d2}`, [a.id]],
      [`date=gt${d1}&date=le${d2}`, [b.id]],
      [`date=ne${d2}`, [a.id, c.id]],
      [`date=${d3}T14:30`, [c.id]],
      [`date=${d3}T14:00`, []],
      [`date=${d1},${d3}`, [a.id, c.id]],
      ['status=booked', [a.id, b.id]],
      ['status=http://hl7.org/fhir/appointmentstatus|noshow', [c.id]],
      ['status=noshow,fulfilled', [c.id]],
      ['status=cancelled', []],
      ['status=CONFIRMED', []],
      [`_id=${a.id},${c.id}`, [a.id, c.id]],
      ['_lastUpdated=ge2000-01-01&status=booked', [a.id, b.id]],
      ['_lastUpdated=lt2000-01-01', []],
    ])
    expect(await allPages(clinic.nurse, '/Appointment?_count=2')).toEqual([a.id, b.id, c.id])
    const counted = expectFhir(await get(clinic.nurse, '/Appointment?_summary=count&status=booked')) as Bundle
    expect(counted.total).toBe(2)
    expect(counted.entry).toBeUndefined()
    expect((await get(clinic.nurse, '/Appointment?date=soon')).statusCode).toBe(400)
  })

  it('keeps a patient/ token to its launch patient’s appointments', async () => {
    const clinic = await newClinic(app)
    const otherPatient = await createPatient(app, clinic.nurse)
    const mine = await booked(app, clinic, DAY, '10:00:00')
    const theirs = await booked(app, clinic, DAY, '11:00:00', { patientId: otherPatient })
    for (const scopes of [['patient/Appointment.read'], ['patient/*.rs']]) {
      const token = smartToken(app, clinic.org, clinic.nurse, scopes, clinic.patient.id)
      expect((await get(token, `/Appointment/${mine.id}`)).statusCode, scopes[0]).toBe(200)
      expect((await get(token, `/Appointment/${theirs.id}`)).statusCode, scopes[0]).toBe(403)
      expect(matchIds(expectFhir(await get(token, '/Appointment')) as Bundle), scopes[0]).toEqual([mine.id])
      expect(
        matchIds(expectFhir(await get(token, `/Appointment?patient=${otherPatient}`)) as Bundle),
      ).toEqual([])
      const counted = expectFhir(await get(token, '/Appointment?_summary=count')) as Bundle
      expect(counted.total).toBe(1)
    }
  })
})

const note = (encounterDate: string, encounterType = 'OFFICE_VISIT') => ({
  encounterDate,
  encounterType,
  chiefComplaint: 'Headache',
  soapNote: { subjective: 'Headache for three days', plan: 'Ibuprofen as needed' },
})

async function encounterOf(clinic: Clinic, body: object) {
  const response = await app.inject({
    method: 'POST',
    url: '/api/encounters',
    headers: bearer(clinic.doctor.token),
    payload: { patientId: clinic.patient.id, providerId: clinic.provider.id, ...body },
  })
  expect(response.statusCode, response.body).toBe(201)
  return response.json().data as { id: number }
}

const sign = (clinic: Clinic, id: number) =>
  app.inject({ method: 'POST', url: `/api/encounters/${id}/sign`, headers: bearer(clinic.doctor.token) })

describe('GET /fhir/R4/Encounter', () => {
  it('returns the encounter with status, class, type, subject, participant, appointment, period, reason, location and service provider', async () => {
    const clinic = await newClinic(app)
    const appointment = await booked(app, clinic, daysFromToday(2), '10:00:00')
    const encounter = await encounterOf(clinic, { ...note('2024-03-15'), appointmentId: appointment.id })
    const response = await get(clinic.nurse, `/Encounter/${encounter.id}`)
    expect(response.statusCode).toBe(200)
    expect(expectFhir(response)).toEqual({
      resourceType: 'Encounter',
      id: String(encounter.id),
      meta: {
        versionId: '1',
        lastUpdated: expect.any(String),
        profile: ['http://hl7.org/fhir/us/core/StructureDefinition/us-core-encounter|6.1.0'],
      },
      status: 'in-progress',
      class: {
        system: 'http://terminology.hl7.org/CodeSystem/v3-ActCode',
        code: 'AMB',
        display: 'ambulatory',
      },
      type: [
        {
          coding: [{ system: VISIT_TYPE_SYSTEM, code: 'OFFICE_VISIT', display: 'Office visit' }],
          text: 'Office visit',
        },
      ],
      subject: { reference: `Patient/${clinic.patient.id}` },
      participant: [
        {
          type: [
            {
              coding: [
                {
                  system: 'http://terminology.hl7.org/CodeSystem/v3-ParticipationType',
                  code: 'PPRF',
                  display: 'primary performer',
                },
              ],
            },
          ],
          individual: { reference: `Practitioner/${clinic.provider.id}` },
        },
      ],
      appointment: [{ reference: `Appointment/${appointment.id}` }],
      period: { start: '2024-03-15' },
      reasonCode: [{ text: 'Headache' }],
      location: [{ location: { reference: `Location/${clinic.org.id}` } }],
      serviceProvider: { reference: `Organization/${clinic.org.id}` },
    })
    // The note's clinical text is not part of the Encounter.
    expect(response.body).not.toContain('Ibuprofen')
    expect(response.headers.etag).toBe('W/"1"')
    expect(
      (await get(clinic.nurse, `/Encounter/${encounter.id}`, { 'if-none-match': 'W/"1"' })).statusCode,
    ).toBe(304)
    expect((await sign(clinic, encounter.id)).statusCode).toBe(200)
    const signed = expectFhir(await get(clinic.nurse, `/Encounter/${encounter.id}`)) as Encounter
    expect(signed.status).toBe('finished')
    expect(signed.meta?.versionId).toBe('2')
    expect((await get(clinic.nurse, `/Encounter/${encounter.id}/_history/2`)).statusCode).toBe(200)
    // The version before the signature is kept, as it was.
    const before = expectFhir(await get(clinic.nurse, `/Encounter/${encounter.id}/_history/1`)) as Encounter
    expect([before.meta?.versionId, before.status]).toEqual(['1', 'in-progress'])
    expect((await get(clinic.nurse, `/Encounter/${encounter.id}/_history/3`)).statusCode).toBe(404)
  })

  it('classes a telehealth visit as virtual and keeps an amended note finished, without absent parts', async () => {
    const clinic = await newClinic(app)
    const encounter = await encounterOf(clinic, { ...note('2024-03-15', 'TELEHEALTH'), chiefComplaint: null })
    expect((await sign(clinic, encounter.id)).statusCode).toBe(200)
    const addendum = await app.inject({
      method: 'POST',
      url: `/api/encounters/${encounter.id}/addendum`,
      headers: bearer(clinic.doctor.token),
      payload: { text: 'Called back: better' },
    })
    expect(addendum.statusCode, addendum.body).toBe(200)
    const amended = expectFhir(await get(clinic.nurse, `/Encounter/${encounter.id}`)) as Encounter
    expect(amended.status).toBe('finished')
    expect(amended.class).toEqual({
      system: 'http://terminology.hl7.org/CodeSystem/v3-ActCode',
      code: 'VR',
      display: 'virtual',
    })
    expect(amended.appointment).toBeUndefined()
    expect(amended.reasonCode).toBeUndefined()
  })

  it('answers 404 unknown, 403 another organization’s, 403 a role the REST routes refuse; the front desk reads', async () => {
    const clinic = await newClinic(app)
    const other = await newClinic(app)
    const foreign = await encounterOf(other, note('2024-03-15'))
    const mine = await encounterOf(clinic, note('2024-03-15'))
    const desk = await clinic.org.user('FRONT_DESK')
    await expectOutcomes([
      [clinic.nurse.token, '/Encounter/2000000000', 404, 'not-found'],
      [clinic.nurse.token, `/Encounter/${foreign.id}`, 403, 'forbidden'],
      [clinic.admin.token, `/Encounter/${mine.id}`, 403, 'forbidden'],
      [clinic.admin.token, '/Encounter', 403, 'forbidden'],
      [desk.token, `/Encounter/${mine.id}`, 403, 'forbidden'],
    ])
    expect((await get(clinic.doctor, `/Encounter/${mine.id}`)).statusCode).toBe(200)
  })

  it('searches by patient, practitioner, date with prefixes, status, class, type, _lastUpdated and _id; pages and counts', async () => {
    const clinic = await newClinic(app)
    const otherPatient = await createPatient(app, clinic.nurse)
    const second = await createProvider(app, clinic.admin)
    const a = await encounterOf(clinic, note('2024-01-10'))
    const b = await encounterOf(clinic, { ...note('2024-02-15', 'TELEHEALTH'), patientId: otherPatient })
    const c = await encounterOf(clinic, { ...note('2024-03-20', 'FOLLOW_UP'), providerId: second.id })
    expect((await sign(clinic, b.id)).statusCode).toBe(200)
    await encounterOf(await newClinic(app), note('2024-01-10'))
    await expectSearches(clinic.nurse, 'Encounter', [
      ['', [a.id, b.id, c.id]],
      [`patient=${clinic.patient.id}`, [a.id, c.id]],
      [`patient=Patient/${otherPatient}`, [b.id]],
      [`practitioner=Practitioner/${second.id}`, [c.id]],
      ['date=2024-01-10', [a.id]],
      ['date=2024-02', [b.id]],
      ['date=ge2024-02-15', [b.id, c.id]],
      ['date=lt2024-02-15', [a.id]],
      ['date=gt2024-01-10&date=le2024-02-15', [b.id]],
      ['date=ne2024-02-15', [a.id, c.id]],
      ['date=2023', []],
      ['status=in-progress', [a.id, c.id]],
      ['status=http://hl7.org/fhir/encounter-status|finished', [b.id]],
      ['status=cancelled', []],
      ['class=VR', [b.id]],
      ['class=http://terminology.hl7.org/CodeSystem/v3-ActCode|AMB', [a.id, c.id]],
      ['class=AMB,VR', [a.id, b.id, c.id]],
      ['class=IMP', []],
      ['type=FOLLOW_UP', [c.id]],
      [`type=${VISIT_TYPE_SYSTEM}|OFFICE_VISIT,TELEHEALTH`, [a.id, b.id]],
      ['type=https://other.example/types|FOLLOW_UP', []],
      [`_id=${a.id},${c.id}`, [a.id, c.id]],
      ['_lastUpdated=ge2000-01-01&status=finished', [b.id]],
      ['_lastUpdated=lt2000-01-01', []],
    ])
    expect(await allPages(clinic.nurse, '/Encounter?_count=2')).toEqual([a.id, b.id, c.id])
    const counted = expectFhir(await get(clinic.nurse, '/Encounter?_summary=count&class=AMB')) as Bundle
    expect(counted.total).toBe(2)
    expect(counted.entry).toBeUndefined()
  })

  it('keeps a patient/ token to its launch patient’s encounters', async () => {
    const clinic = await newClinic(app)
    const otherPatient = await createPatient(app, clinic.nurse)
    const mine = await encounterOf(clinic, note('2024-03-15'))
    const theirs = await encounterOf(clinic, { ...note('2024-03-15'), patientId: otherPatient })
    const token = smartToken(app, clinic.org, clinic.nurse, ['patient/Encounter.rs'], clinic.patient.id)
    expect((await get(token, `/Encounter/${mine.id}`)).statusCode).toBe(200)
    expect((await get(token, `/Encounter/${theirs.id}`)).statusCode).toBe(403)
    expect(matchIds(expectFhir(await get(token, '/Encounter')) as Bundle)).toEqual([mine.id])
    expect(matchIds(expectFhir(await get(token, `/Encounter?patient=${otherPatient}`)) as Bundle)).toEqual([])
    expect((expectFhir(await get(token, '/Encounter?_summary=count')) as Bundle).total).toBe(1)
  })
})
