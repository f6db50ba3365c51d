import type {
  Appointment,
  AppointmentParticipant,
  Bundle,
  CapabilityStatement,
  OperationOutcome,
} from '@medplum/fhirtypes'
import fc from 'fast-check'
import { Client, type FhirResource } from 'fhir-kit-client'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { VisitType } from '../../../schemas/appointments.js'
import type { App } from '../../../src/app.js'
import { VISIT_TYPE_SYSTEM, visitType } from '../../../src/modules/fhir/appointment.js'
import { zonedInstant } from '../../../src/scheduling/zoned-time.js'
import {
  bearer,
  createPatient,
  daysFromToday,
  everyDay,
  nthSunday,
  tokenFor,
} from '../../helpers/factories.js'
import { asSent, headersOf, listeningFhirApp, refusal } from '../../helpers/fhir-client.js'
import { expectStoredAsSent, freeText, optional } from '../../helpers/fhir-properties.js'
import { fhirErrors } from '../../helpers/fhir-validator.js'
import {
  book,
  booked,
  createProvider,
  newPractice,
  outboxEvents,
  type Practice,
} from '../../helpers/scheduling.js'

// FHIR create, update and patch of appointments, driven by fhir-kit-client.

let app: App
let baseUrl: string

beforeAll(async () => {
  ;({ app, baseUrl } = await listeningFhirApp())
})
afterAll(async () => {
  await app.close()
})

const DAY = daysFromToday(7)
const NEXT_YEAR = new Date().getUTCFullYear() + 1
const ACTOR = 'Appointment.participant.actor'

const clientFor = (token: string) => new Client({ baseUrl, bearerToken: token })
const nurseOf = (practice: Practice) => clientFor(practice.nurse.token)

/** A booked Appointment as an integrator would send one: `minutes` long from `start`, with the practice's patient and provider. */
function newAppointment(
  practice: Practice,
  start: string,
  minutes = 30,
  overrides: Partial<Appointment> = {},
): Appointment {
  return {
    resourceType: 'Appointment',
    status: 'booked',
    start,
    end: new Date(Date.parse(start) + minutes * 60_000).toISOString(),
    participant: [
      { actor: { reference: `Patient/${practice.patient.id}` }, status: 'needs-action' },
      { actor: { reference: `Practitioner/${practice.provider.id}` }, status: 'accepted' },
    ],
    ...overrides,
  }
}

const expressionsOf = (outcome: OperationOutcome) => outcome.issue?.flatMap((issue) => issue.expression ?? [])

/** An appointment as the server answers one. */
type Stored = Appointment & { id: string }
const stored = async (answer: Promise<unknown>) => (await answer) as Stored

const create = (client: Client, appointment: Appointment, headers: Record<string, string> = {}) =>
  stored(client.create({ resourceType: 'Appointment', body: asSent(appointment), options: { headers } }))

const update = (client: Client, appointment: Stored, headers: Record<string, string> = {}) =>
  stored(
    client.update({
      resourceType: 'Appointment',
      id: appointment.id,
      body: asSent(appointment),
      options: { headers },
    }),
  )

const read = (client: Client, id: string) => stored(client.read({ resourceType: 'Appointment', id }))

const restAppointment = async (practice: Practice, id: number | string) => {
  const response = await app.inject({ url: `/api/appointments/${id}`, headers: bearer(practice.nurse.token) })
  expect(response.statusCode).toBe(200)
  return response.json().data
}

const auditOf = (organizationId: number) =>
  app.db
    .selectFrom('audit_log')
    .select(['action', 'resource_type', 'resource_ids', 'status_code', 'outcome'])
    .where('organization_id', '=', organizationId)
    .where('resource_type', '=', 'appointment')
    .orderBy('id')
    .execute()

const appointmentCount = async (organizationId: number) =>
  Number(
    (
      await app.db
        .selectFrom('appointments')
        .select((eb) => eb.fn.countAll<number>().as('count'))
        .where('organization_id', '=', organizationId)
        .executeTakeFirstOrThrow()
    ).count,
  )

describe('FHIR create of an Appointment', () => {
  it('books as POST /api/appointments does: location, ETag, the same event and audit record', async () => {
    const practice = await newPractice(app)
    const client = nurseOf(practice)
    const sent = newAppointment(practice, `${DAY}T10:00:00Z`, 45, {
      appointmentType: { coding: [{ system: VISIT_TYPE_SYSTEM, code: 'FOLLOW_UP' }] },
      reasonCode: [{ text: 'Blood pressure check' }],
    })
    const created = await create(client, sent)
    expect(fhirErrors(created)).toEqual([])
    const headers = headersOf(created)
    expect(headers.get('location')).toBe(`${baseUrl}/Appointment/${created.id}/_history/1`)
    expect(headers.get('etag')).toBe('W/"1"')
    expect(created).toMatchObject({
      status: 'booked',
      start: `${DAY}T10:00:00.000Z`,
      end: `${DAY}T10:45:00.000Z`,
      minutesDuration: 45,
      reasonCode: [{ text: 'Blood pressure check' }],
      participant: sent.participant?.map((participant) => ({ ...participant, required: 'required' })),
    })
    expect(created.appointmentType?.coding).toContainEqual({
      system: VISIT_TYPE_SYSTEM,
      code: 'FOLLOW_UP',
      display: 'Follow-up visit',
    })
    const readBack = await read(nurseOf(practice), created.id)
    expect(fhirErrors(readBack)).toEqual([])
    expect(readBack).toEqual({ ...created })

    expect(await restAppointment(practice, created.id)).toMatchObject({
      patientId: practice.patient.id,
      providerId: practice.provider.id,
      appointmentDate: DAY,
      appointmentTime: '10:00:00',
      timeZone: 'UTC',
      duration: 45,
      appointmentType: 'FOLLOW_UP',
      priority: 'ROUTINE',
      reason: 'Blood pressure check',
      notes: null,
      status: 'SCHEDULED',
      version: 1,
    })

    const rest = await booked(app, practice, DAY, '11:00:00')
    const events = (await outboxEvents(app, practice.org.id)).filter((event) =>
      event.event_type.startsWith('appointment.'),
    )
    expect(events.map((event) => [event.event_type, event.payload.data])).toEqual([
      [
        'appointment.created',
        {
          id: Number(created.id),
          patientId: practice.patient.id,
          providerId: practice.provider.id,
          appointmentDate: DAY,
          appointmentTime: '10:00:00',
        },
      ],
      [
        'appointment.created',
        {
          id: rest.id,
          patientId: practice.patient.id,
          providerId: practice.provider.id,
          appointmentDate: DAY,
          appointmentTime: '11:00:00',
        },
      ],
    ])
    const creations = (await auditOf(practice.org.id)).filter((row) => row.action === 'CREATE')
    expect(creations).toEqual(
      [Number(created.id), rest.id].map((id) => ({
        action: 'CREATE',
        resource_type: 'appointment',
        resource_ids: [id],
        status_code: 201,
        outcome: 'SUCCESS',
      })),
    )
  })

  it('books the start’s moment in the provider’s time zone, whatever offset it is written with', async () => {
    const practice = await newPractice(app, { timeZone: 'America/New_York' })
    const summer = `${NEXT_YEAR}-07-15`
    const created = await create(nurseOf(practice), newAppointment(practice, `${summer}T10:00:00-04:00`))
    expect([created.start, created.end]).toEqual([`${summer}T14:00:00.000Z`, `${summer}T14:30:00.000Z`])
    expect(await restAppointment(practice, created.id)).toMatchObject({
      appointmentDate: summer,
      appointmentTime: '10:00:00',
      timeZone: 'America/New_York',
      startsAt: `${summer}T14:00:00.000Z`,
    })
  })

  it('takes the visit type from its HL7 v2 code when the service’s own is absent', async () => {
    const practice = await newPractice(app)
    const created = await create(
      nurseOf(practice),
      newAppointment(practice, `${DAY}T10:00:00Z`, 30, {
        appointmentType: {
          coding: [{ system: 'http://terminology.hl7.org/CodeSystem/v2-0276', code: 'CHECKUP' }],
        },
      }),
    )
    expect((await restAppointment(practice, created.id)).appointmentType).toBe('ANNUAL_PHYSICAL')
  })

  it('books the first run of an hour the clocks repeat, and refuses the second as REST cannot book it', async () => {
    const fall = nthSunday(NEXT_YEAR, 11, 1)
    const practice = await newPractice(app, {
      timeZone: 'America/New_York',
      weeklyHours: everyDay(['00:00', '24:00']),
    })
    const client = nurseOf(practice)
    // 01:30 happens at 05:30Z (daylight time), then again at 06:30Z (standard time).
    const second = await refusal(create(client, newAppointment(practice, `${fall}T06:30:00Z`)))
    expect(second.status).toBe(422)
    expect(expressionsOf(second.outcome)).toEqual(['Appointment.start'])
    const first = await create(client, newAppointment(practice, `${fall}T05:30:00Z`))
    expect(await restAppointment(practice, first.id)).toMatchObject({
      appointmentDate: fall,
      appointmentTime: '01:30:00',
      startsAt: `${fall}T05:30:00.000Z`,
    })
  })

  it('refuses a double booking with 409, as REST does, and stores nothing', async () => {
    const practice = await newPractice(app)
    const client = nurseOf(practice)
    await booked(app, practice, DAY, '10:00:00', { duration: 60 })
    const overlapping = await refusal(create(client, newAppointment(practice, `${DAY}T10:30:00Z`)))
    expect(overlapping.status).toBe(409)
    expect(fhirErrors(overlapping.outcome)).toEqual([])
    expect(
      overlapping.outcome.issue?.[0]?.diagnostics ?? overlapping.outcome.issue?.[0]?.details?.text,
    ).toMatch(/overlapping/)
    const rest = await book(app, practice.nurse, {
      patientId: practice.patient.id,
      providerId: practice.provider.id,
      appointmentDate: DAY,
      appointmentTime: '10:30:00',
    })
    expect(rest.statusCode).toBe(409)
    await create(client, newAppointment(practice, `${DAY}T11:00:00Z`))
    expect((await refusal(create(client, newAppointment(practice, `${DAY}T11:00:00Z`)))).status).toBe(409)
    expect(await appointmentCount(practice.org.id)).toBe(2)
  })

  it('refuses what the booking rules refuse, naming the element (422)', async () => {
    const practice = await newPractice(app)
    const client = nurseOf(practice)
    const at = (time: string, minutes?: number, overrides: Partial<Appointment> = {}) =>
      newAppointment(practice, `${DAY}T${time}Z`, minutes, overrides)
    const cases: [Appointment, string[]][] = [
      [
        newAppointment(practice, `${daysFromToday(-2)}T10:00:00Z`),
        ['Appointment.start', 'Appointment.start'],
      ],
      [at('18:00:00'), ['Appointment.start', 'Appointment.end']],
      [at('10:00:30'), ['Appointment.start']],
      [at('10:00:00', 10), ['Appointment.end']],
      [at('10:00:00', 30, { status: 'proposed' }), ['Appointment.status']],
      [
        at('10:00:00', 30, {
          participant: [
            { actor: { reference: `Patient/${practice.patient.id}` }, status: 'accepted' },
            { actor: { reference: `Practitioner/${practice.provider.id}` }, status: 'accepted' },
          ],
        }),
        ['Appointment.status'],
      ],
      [
        at('10:00:00', 30, { appointmentType: { coding: [{ system: VISIT_TYPE_SYSTEM, code: 'SURGERY' }] } }),
        ['Appointment.appointmentType'],
      ],
    ]
    for (const [body, expressions] of cases) {
      const { status, outcome } = await refusal(create(client, body))
      expect(status, JSON.stringify(body)).toBe(422)
      expect(expressionsOf(outcome), JSON.stringify(body)).toEqual(expressions)
      expect(fhirErrors(outcome)).toEqual([])
    }
    expect(await appointmentCount(practice.org.id)).toBe(0)
  })

  it('refuses every element the service cannot store (422, naming it), and stores nothing', async () => {
    const practice = await newPractice(app)
    const client = nurseOf(practice)
    const start = `${DAY}T10:00:00Z`
    const [patient, practitioner] = newAppointment(practice, start).participant
    const cases: [Appointment, string[]][] = [
      [newAppointment(practice, start, 30, { comment: 'Bring the glucose diary' }), ['Appointment.comment']],
      [newAppointment(practice, start, 30, { priority: 1 }), ['Appointment.priority']],
      [newAppointment(practice, start, 30, { minutesDuration: 20 }), ['Appointment.minutesDuration']],
      [newAppointment(practice, `${DAY}T10:00:00.250Z`), ['Appointment.start', 'Appointment.end']],
      [
        newAppointment(practice, start, 30, { reasonCode: [{ text: 'Check-up' }, { text: 'Flu shot' }] }),
        ['Appointment.reasonCode[1]'],
      ],
      [
        newAppointment(practice, start, 30, {
          participant: [
            { ...patient, type: [{ text: 'Patient' }] },
            practitioner,
            { actor: { reference: 'Location/1' }, status: 'accepted' },
          ] as Appointment['participant'],
        }),
        ['Appointment.participant[0].type', 'Appointment.participant[2]'],
      ],
    ]
    for (const [body, expressions] of cases) {
      const { status, outcome } = await refusal(create(client, body))
      expect(status, expressions.join()).toBe(422)
      expect(expressionsOf(outcome)).toEqual(expressions)
    }
    expect(await appointmentCount(practice.org.id)).toBe(0)
  })

  it('refuses another organization’s patient or practitioner (403) and a reference to nothing (422)', async () => {
    const practice = await newPractice(app)
    const other = await newPractice(app)
    const client = nurseOf(practice)
    const start = `${DAY}T10:00:00Z`
    const withActors = (patient: string, practitioner: string) =>
      newAppointment(practice, start, 30, {
        participant: [
          { actor: { reference: patient }, status: 'needs-action' },
          { actor: { reference: practitioner }, status: 'accepted' },
        ],
      })
    const mine = [`Patient/${practice.patient.id}`, `Practitioner/${practice.provider.id}`] as const
    const theirPatient = await refusal(create(client, withActors(`Patient/${other.patient.id}`, mine[1])))
    expect(theirPatient.status).toBe(403)
    const theirPractitioner = await refusal(
      create(client, withActors(mine[0], `Practitioner/${other.provider.id}`)),
    )
    expect(theirPractitioner.status).toBe(403)
    const cases: [Appointment, RegExp][] = [
      [withActors('Patient/2000000000', mine[1]), /names Patient\/2000000000, which is no record/],
      [withActors(mine[0], 'Practitioner/2000000000'), /names Practitioner\/2000000000, which is no record/],
      [withActors('Patient/not-a-number', mine[1]), /names Patient\/not-a-number, which is no record/],
      [
        newAppointment(practice, start, 30, {
          participant: [{ actor: { reference: mine[1] }, status: 'accepted' }],
        }),
        /is required/,
      ],
    ]
    for (const [body, diagnostics] of cases) {
      const { status, outcome } = await refusal(create(client, body))
      expect(status, String(diagnostics)).toBe(422)
      expect(outcome.issue?.map((issue) => [issue.expression, issue.diagnostics])).toEqual([
        [[ACTOR], expect.stringMatching(diagnostics)],
      ])
    }
    expect(await appointmentCount(practice.org.id)).toBe(0)
    expect(await appointmentCount(other.org.id)).toBe(0)
  })

  it('with If-None-Exist, answers the one match instead of booking again', async () => {
    const practice = await newPractice(app)
    const client = nurseOf(practice)
    const sent = newAppointment(practice, `${DAY}T10:00:00Z`)
    const first = await create(client, sent)
    const again = await create(client, sent, {
      'if-none-exist': `patient=${practice.patient.id}&date=${DAY}T10:00:00Z`,
    })
    expect(again.id).toBe(first.id)
    expect(await appointmentCount(practice.org.id)).toBe(1)
  })
})

describe('FHIR update and patch of an Appointment', () => {
  it('reschedules with If-Match as PUT /api/appointments/{id} does; a stale one is 412; unchanged makes no version', async () => {
    const practice = await newPractice(app)
    const client = nurseOf(practice)
    const created = await create(client, newAppointment(practice, `${DAY}T10:00:00Z`))
    const moved = await update(
      client,
      { ...created, start: `${DAY}T14:00:00Z`, end: `${DAY}T15:00:00Z`, minutesDuration: 60 },
      { 'if-match': 'W/"1"' },
    )
    expect(moved).toMatchObject({ id: created.id, meta: { versionId: '2' }, start: `${DAY}T14:00:00.000Z` })
    expect(headersOf(moved).get('etag')).toBe('W/"2"')
    expect(fhirErrors(moved)).toEqual([])
    expect(await restAppointment(practice, created.id)).toMatchObject({
      appointmentDate: DAY,
      appointmentTime: '14:00:00',
      duration: 60,
      version: 2,
    })

    const stale = await refusal(
      update(client, { ...moved, reasonCode: [{ text: 'Later' }] }, { 'if-match': 'W/"1"' }),
    )
    expect(stale.status).toBe(412)

    const current = await read(client, created.id)
    const unchanged = await update(client, current)
    expect(unchanged.meta?.versionId).toBe('2')
    expect(unchanged).toEqual({ ...current })

    // The time it had is free again; the one it took is not.
    await booked(app, practice, DAY, '10:00:00')
    expect((await refusal(create(client, newAppointment(practice, `${DAY}T14:30:00Z`)))).status).toBe(409)

    const events = await outboxEvents(app, practice.org.id)
    expect(events.map((event) => event.event_type)).toEqual([
      'patient.created',
      'appointment.created',
      'appointment.updated',
      'appointment.created',
    ])
    expect(events[2]?.payload.data).toEqual({
      id: Number(created.id),
      patientId: practice.patient.id,
      providerId: practice.provider.id,
      appointmentDate: DAY,
      appointmentTime: '14:00:00',
      status: 'SCHEDULED',
    })
    const restPut = await app.inject({
      method: 'PUT',
      url: `/api/appointments/${created.id}`,
      headers: bearer(practice.nurse.token),
      payload: { appointmentTime: '15:00:00' },
    })
    expect(restPut.statusCode).toBe(200)
    const updates = (await auditOf(practice.org.id)).filter((row) => row.action === 'UPDATE')
    // The FHIR update, the stale one, the unchanged one (changing nothing), then the REST one.
    expect(updates).toEqual(
      [200, 412, 200, 200].map((status_code) => ({
        action: 'UPDATE',
        resource_type: 'appointment',
        resource_ids: [Number(created.id)],
        status_code,
        outcome: status_code === 200 ? 'SUCCESS' : 'REJECTED',
      })),
    )
  })

  it('changes the status along the REST lifecycle; cancelling stays the cancel route’s (422)', async () => {
    const practice = await newPractice(app)
    const client = nurseOf(practice)
    const created = await create(client, newAppointment(practice, `${DAY}T10:00:00Z`))
    const withPatientStatus = (appointment: Stored, status: 'accepted' | 'needs-action') => ({
      ...appointment,
      participant: appointment.participant.map((participant) =>
        participant.actor?.reference?.startsWith('Patient/') ? { ...participant, status } : participant,
      ),
    })
    const confirmed = await update(client, withPatientStatus(created, 'accepted'))
    expect((await restAppointment(practice, created.id)).status).toBe('CONFIRMED')
    const cancelling = await refusal(update(client, { ...confirmed, status: 'cancelled' }))
    expect(cancelling.status).toBe(422)
    expect(expressionsOf(cancelling.outcome)).toEqual(['Appointment.status'])
    const back = await refusal(update(client, withPatientStatus(confirmed, 'needs-action')))
    expect(back.status).toBe(409)

    const checkedIn = await update(client, { ...confirmed, status: 'checked-in' })
    expect((await restAppointment(practice, created.id)).status).toBe('CHECKED_IN')
    const started = await app.inject({
      method: 'PUT',
      url: `/api/appointments/${created.id}`,
      headers: bearer(practice.nurse.token),
      payload: { status: 'IN_PROGRESS' },
    })
    expect(started.statusCode).toBe(200)
    // Under way, it still reads checked-in: written back, it stays IN_PROGRESS and no version is made.
    const underWay = await read(client, created.id)
    expect([underWay.status, underWay.meta?.versionId]).toEqual(['checked-in', '4'])
    expect(checkedIn.meta?.versionId).toBe('3')
    expect((await update(client, underWay)).meta?.versionId).toBe('4')
    expect((await restAppointment(practice, created.id)).status).toBe('IN_PROGRESS')
    const fulfilled = await update(client, { ...underWay, status: 'fulfilled' })
    expect(fulfilled.status).toBe('fulfilled')
    expect((await restAppointment(practice, created.id)).status).toBe('COMPLETED')
  })

  it('writes back a cancelled appointment unchanged, reason and all, without a version', async () => {
    const practice = await newPractice(app)
    const client = nurseOf(practice)
    const created = await create(client, newAppointment(practice, `${DAY}T10:00:00Z`))
    const cancelled = await app.inject({
      method: 'POST',
      url: `/api/appointments/${created.id}/cancel`,
      headers: bearer(practice.nurse.token),
      payload: { reason: 'Patient called to cancel' },
    })
    expect(cancelled.statusCode).toBe(200)
    const current = await read(client, created.id)
    expect(current.cancelationReason).toEqual({ text: 'Patient called to cancel' })
    const unchanged = await update(client, current)
    expect(unchanged).toEqual({ ...current })
    const reasoned = await update(client, { ...current, reasonCode: [{ text: 'Follow-up' }] })
    expect([reasoned.meta?.versionId, reasoned.status, reasoned.cancelationReason?.text]).toEqual([
      '3',
      'cancelled',
      'Patient called to cancel',
    ])
    const otherReason = await refusal(update(client, { ...current, cancelationReason: { text: 'Weather' } }))
    expect(expressionsOf(otherReason.outcome)).toEqual(['Appointment.cancelationReason.text'])
  })

  it('refuses another patient for the appointment (422) and another organization’s appointment (403)', async () => {
    const practice = await newPractice(app)
    const client = nurseOf(practice)
    const created = await create(client, newAppointment(practice, `${DAY}T10:00:00Z`))
    const otherPatient = await createPatient(app, practice.nurse)
    const moved = await refusal(
      update(client, {
        ...created,
        participant: created.participant.map((participant, index) =>
          index === 0 ? { ...participant, actor: { reference: `Patient/${otherPatient}` } } : participant,
        ),
      }),
    )
    expect(moved.status).toBe(422)
    expect(expressionsOf(moved.outcome)).toEqual([ACTOR])
    const stranger = await newPractice(app)
    expect((await refusal(update(nurseOf(stranger), created))).status).toBe(403)
    expect(await restAppointment(practice, created.id)).toMatchObject({
      patientId: practice.patient.id,
      version: 1,
    })
  })

  it('patches with JSON Patch, checked like an update', async () => {
    const practice = await newPractice(app)
    const client = nurseOf(practice)
    const created = await create(client, newAppointment(practice, `${DAY}T10:00:00Z`))
    const patched = await stored(
      client.patch({
        resourceType: 'Appointment',
        id: created.id,
        jsonPatch: [
          { op: 'test', path: '/start', value: `${DAY}T10:00:00.000Z` },
          { op: 'replace', path: '/start', value: `${DAY}T11:00:00Z` },
          { op: 'replace', path: '/end', value: `${DAY}T11:30:00Z` },
          { op: 'add', path: '/reasonCode', value: [{ text: 'Flu shot' }] },
        ],
      }),
    )
    expect(patched).toMatchObject({
      meta: { versionId: '2' },
      start: `${DAY}T11:00:00.000Z`,
      minutesDuration: 30,
    })
    expect(await restAppointment(practice, created.id)).toMatchObject({
      appointmentTime: '11:00:00',
      reason: 'Flu shot',
    })
    const unstorable = await refusal(
      client.patch({
        resourceType: 'Appointment',
        id: created.id,
        jsonPatch: [{ op: 'add', path: '/comment', value: 'Bring the diary' }],
      }),
    )
    expect(unstorable.status).toBe(422)
    expect(expressionsOf(unstorable.outcome)).toEqual(['Appointment.comment'])
    const stale = await refusal(
      client.patch({
        resourceType: 'Appointment',
        id: created.id,
        jsonPatch: [{ op: 'remove', path: '/reasonCode' }],
        options: { headers: { 'if-match': 'W/"1"' } },
      }),
    )
    expect(stale.status).toBe(412)
  })

  it('updates conditionally on a search matching one appointment, and books on none', async () => {
    const practice = await newPractice(app)
    const client = nurseOf(practice)
    const searchParams = { patient: String(practice.patient.id), date: `${DAY}T10:00:00Z` }
    const sent = newAppointment(practice, `${DAY}T10:00:00Z`)
    const created = await stored(
      client.update({ resourceType: 'Appointment', searchParams, body: asSent(sent) }),
    )
    expect(created.meta?.versionId).toBe('1')
    const updated = await stored(
      client.update({
        resourceType: 'Appointment',
        searchParams,
        body: asSent({ ...sent, reasonCode: [{ text: 'Check-up' }] }),
      }),
    )
    expect([updated.id, updated.meta?.versionId, updated.reasonCode]).toEqual([
      created.id,
      '2',
      [{ text: 'Check-up' }],
    ])
    expect(await appointmentCount(practice.org.id)).toBe(1)
  })
})

describe('appointments in a transaction Bundle', () => {
  it('registers a patient and books their appointment in one transaction, or neither when the time is taken', async () => {
    const practice = await newPractice(app)
    const client = nurseOf(practice)
    const transaction = (time: string) =>
      ({
        resourceType: 'Bundle',
        type: 'transaction',
        entry: [
          {
            fullUrl: 'urn:uuid:5b0f6a1e-8c3d-4d2a-9f5e-1a2b3c4d5e6f',
            resource: {
              resourceType: 'Patient',
              name: [{ family: 'Hopper', given: ['Grace'] }],
              gender: 'female',
              birthDate: '1906-12-09',
            },
            request: { method: 'POST', url: 'Patient' },
          },
          {
            resource: newAppointment(practice, `${DAY}T${time}Z`, 30, {
              participant: [
                {
                  actor: { reference: 'urn:uuid:5b0f6a1e-8c3d-4d2a-9f5e-1a2b3c4d5e6f' },
                  status: 'needs-action',
                },
                { actor: { reference: `Practitioner/${practice.provider.id}` }, status: 'accepted' },
              ],
            }),
            request: { method: 'POST', url: 'Appointment' },
          },
        ],
      }) as unknown as FhirResource
    await booked(app, practice, DAY, '10:00:00')
    const before = await outboxEvents(app, practice.org.id)
    expect((await refusal(client.transaction({ body: transaction('10:00:00') }))).status).toBe(409)
    expect(await outboxEvents(app, practice.org.id)).toEqual(before)
    expect(await appointmentCount(practice.org.id)).toBe(1)

    const done = (await client.transaction({ body: transaction('11:00:00') })) as unknown as Bundle
    const [patientEntry, appointmentEntry] = done.entry ?? []
    expect([patientEntry?.response?.status, appointmentEntry?.response?.status]).toEqual([
      '201 Created',
      '201 Created',
    ])
    const patientId = Number(patientEntry?.resource?.id)
    expect(await restAppointment(practice, String(appointmentEntry?.resource?.id))).toMatchObject({
      patientId,
      appointmentTime: '11:00:00',
    })
    const events = (await outboxEvents(app, practice.org.id)).slice(before.length)
    expect(events.map((event) => event.event_type)).toEqual(['patient.created', 'appointment.created'])
  })
})

describe('who may write appointments', () => {
  it('keeps a patient/ scope to its launch patient’s appointments', async () => {
    const practice = await newPractice(app)
    const other = await createPatient(app, practice.nurse)
    const client = clientFor(
      tokenFor(app, practice.nurse, undefined, {
        scopes: ['patient/Appointment.cru'],
        patient: String(practice.patient.id),
      }),
    )
    const mine = await create(client, newAppointment(practice, `${DAY}T10:00:00Z`))
    expect(mine.id).toBeDefined()
    const theirs = newAppointment(practice, `${DAY}T12:00:00Z`, 30, {
      participant: [
        { actor: { reference: `Patient/${other}` }, status: 'needs-action' },
        { actor: { reference: `Practitioner/${practice.provider.id}` }, status: 'accepted' },
      ],
    })
    expect((await refusal(create(client, theirs))).status).toBe(403)
    const theirsBooked = await create(nurseOf(practice), theirs)
    expect((await refusal(update(client, { ...theirsBooked, reasonCode: [{ text: 'x' }] }))).status).toBe(403)
  })

  it('needs a role that books appointments; no appointment is deleted (405)', async () => {
    const practice = await newPractice(app)
    const billing = await practice.org.user('BILLING')
    const sent = newAppointment(practice, `${DAY}T10:00:00Z`)
    expect((await refusal(create(clientFor(billing.token), sent))).status).toBe(403)
    const desk = await practice.org.user('FRONT_DESK')
    const created = await create(clientFor(desk.token), sent)
    const deleted = await fetch(`${baseUrl}/Appointment/${created.id}`, {
      method: 'DELETE',
      headers: bearer(desk.token),
    })
    expect(deleted.status).toBe(405)
    expect(await appointmentCount(practice.org.id)).toBe(1)
  })

  it('lists create, update and patch of Appointment in the CapabilityStatement, without delete', async () => {
    const statement = (await new Client({ baseUrl }).capabilityStatement()) as unknown as CapabilityStatement
    const appointment = statement.rest?.[0]?.resource?.find((resource) => resource.type === 'Appointment')
    const codes = appointment?.interaction?.map((interaction) => interaction.code) ?? []
    expect(codes).toEqual(expect.arrayContaining(['create', 'update', 'patch']))
    expect(codes).not.toContain('delete')
    expect(appointment?.conditionalDelete).toBe('not-supported')
  })
})

describe('FHIR writes of generated appointments', () => {
  const VISIT_TYPES: string[] = VisitType().enum
  /** The HL7 v2 (table 0276) codes the service reads as visit types of its own. */
  const V2_CODES: Record<string, string> = {
    OFFICE_VISIT: 'ROUTINE',
    FOLLOW_UP: 'FOLLOWUP',
    ANNUAL_PHYSICAL: 'CHECKUP',
  }
  const clock = (minutes: number) =>
    `${String(Math.floor(minutes / 60)).padStart(2, '0')}:${String(minutes % 60).padStart(2, '0')}`

  /** The instant as written with an offset of `minutes` from UTC (Z for none), with or without milliseconds. */
  function written(instant: number, minutes: number | undefined, milliseconds: boolean) {
    const local = new Date(instant + (minutes ?? 0) * 60_000).toISOString().slice(0, milliseconds ? 23 : 19)
    if (minutes === undefined) return `${local}Z`
    return `${local}${minutes < 0 ? '-' : '+'}${clock(Math.abs(minutes))}`
  }

  // A provider of its own for each booking, working the same hours every day, and a booking within
  // them, on a day ahead, in the provider's time zone.
  const booking = fc
    .record({
      timeZone: fc.constantFrom('UTC', ...Intl.supportedValuesOf('timeZone')),
      opens: fc.integer({ min: 0, max: 48 }).map((quarters) => quarters * 15),
      openFor: fc.integer({ min: 8, max: 96 }).map((quarters) => quarters * 15),
      daysAhead: fc.integer({ min: 2, max: 730 }),
      duration: fc.integer({ min: 15, max: 120 }),
      startsAfterOpening: fc.nat(),
    })
    .map(({ timeZone, opens, openFor, daysAhead, duration, startsAfterOpening }) => {
      const closes = Math.min(opens + openFor, 1440)
      const date = daysFromToday(daysAhead)
      const minutes = opens + (startsAfterOpening % (closes - opens - duration + 1))
      const start = zonedInstant(timeZone, date, minutes)
      const bounds = [opens, closes].map((at) => zonedInstant(timeZone, date, at).instant)
      return { timeZone, hours: [clock(opens), clock(closes)] as [string, string], duration, start, bounds }
    })
    // On a day the clocks change: no time they skip, and the hours' real length.
    .filter(
      ({ start, bounds: [opening = 0, closing = 0], duration }) =>
        !start.inGap && opening <= start.instant && start.instant + duration * 60_000 <= closing,
    )

  const offset = optional(fc.integer({ min: -48, max: 56 }).map((quarters) => quarters * 15))
  const appointment = fc.record({
    booking,
    startOffset: offset,
    endOffset: offset,
    milliseconds: fc.boolean(),
    minutesDuration: fc.boolean(),
    visitType: optional(fc.constantFrom(...VISIT_TYPES)),
    // How the visit type is coded: the service's code (with its display, its text), the HL7 v2 one, or both.
    coding: fc.record({ ours: fc.boolean(), v2: fc.boolean(), display: fc.boolean(), text: fc.boolean() }),
    reason: optional(freeText(500)),
    required: fc.boolean(),
    practitionerFirst: fc.boolean(),
  })

  /**
   * The visit type in the service's code system, in HL7 v2's where that has a code for it, or in
   * both; the service's display and text, or not.
   */
  function appointmentType(type: string, how: Record<'ours' | 'v2' | 'display' | 'text', boolean>) {
    const { text } = visitType(type)
    const v2Code = V2_CODES[type]
    const v2 =
      v2Code && (how.v2 || !how.ours)
        ? [{ system: 'http://terminology.hl7.org/CodeSystem/v2-0276', code: v2Code }]
        : []
    const ours =
      v2.length === 0 || how.ours
        ? [{ system: VISIT_TYPE_SYSTEM, code: type, ...(how.display ? { display: text } : {}) }]
        : []
    return { coding: [...v2, ...ours], ...(how.text ? { text } : {}) }
  }

  it('books each valid appointment it is sent as sent, reads back a valid resource, and takes it back unchanged', async () => {
    const practice = await newPractice(app)
    const client = nurseOf(practice)
    await fc.assert(
      fc.asyncProperty(appointment, async (generated) => {
        const { timeZone, hours, duration, start } = generated.booking
        const provider = await createProvider(app, practice.admin, {
          timeZone,
          weeklyHours: everyDay(hours),
        })
        const required = generated.required ? { required: 'required' as const } : {}
        const participant: AppointmentParticipant[] = [
          { actor: { reference: `Patient/${practice.patient.id}` }, status: 'needs-action', ...required },
          { actor: { reference: `Practitioner/${provider.id}` }, status: 'accepted', ...required },
        ]
        if (generated.practitionerFirst) participant.reverse()
        const sent: Appointment = {
          resourceType: 'Appointment',
          status: 'booked',
          ...(generated.visitType
            ? { appointmentType: appointmentType(generated.visitType, generated.coding) }
            : {}),
          ...(generated.reason ? { reasonCode: [{ text: generated.reason }] } : {}),
          start: written(start.instant, generated.startOffset, generated.milliseconds),
          end: written(start.instant + duration * 60_000, generated.endOffset, generated.milliseconds),
          ...(generated.minutesDuration ? { minutesDuration: duration } : {}),
          participant,
        }
        await expectStoredAsSent(client, sent)
      }),
      { numRuns: 20 },
    )
  })
})
