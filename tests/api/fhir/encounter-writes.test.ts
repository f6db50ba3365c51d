import type {
  Bundle,
  BundleEntry,
  CapabilityStatement,
  Encounter,
  OperationOutcome,
} from '@medplum/fhirtypes'
import fc from 'fast-check'
import { Client, type FhirResource } from 'fhir-kit-client'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { VISIT_TYPE_SYSTEM } from '../../../src/modules/fhir/appointment.js'
import { droppedElements } from '../../../src/modules/fhir/stored-elements.js'
import { bearer, createPatient, daysFromToday, encounterNote, tokenFor } from '../../helpers/factories.js'
import { asSent, headersOf, listeningFhirApp, refusal } from '../../helpers/fhir-client.js'
import { days, expectStoredAsSent } from '../../helpers/fhir-properties.js'
import { fhirErrors } from '../../helpers/fhir-validator.js'
import { booked, type Clinic, newClinic, outboxEvents } from '../../helpers/scheduling.js'

// FHIR create, update and patch of encounters (visit notes), driven by fhir-kit-client.

let app: App
let baseUrl: string

beforeAll(async () => {
  ;({ app, baseUrl } = await listeningFhirApp())
})
afterAll(async () => {
  await app.close()
})

const TODAY = daysFromToday(0)
const ACT_CODE_SYSTEM = 'http://terminology.hl7.org/CodeSystem/v3-ActCode'
const AMBULATORY = { system: ACT_CODE_SYSTEM, code: 'AMB' }
const VIRTUAL = { system: ACT_CODE_SYSTEM, code: 'VR' }

const clientFor = (token: string) => new Client({ baseUrl, bearerToken: token })
const doctorOf = (clinic: Clinic) => clientFor(clinic.doctor.token)

/** A visit as an integrator would send one: a draft note of today's follow-up, for a headache. */
function newEncounter(clinic: Clinic, overrides: Partial<Encounter> = {}): Encounter {
  return {
    resourceType: 'Encounter',
    status: 'in-progress',
    class: AMBULATORY,
    type: [{ coding: [{ system: VISIT_TYPE_SYSTEM, code: 'FOLLOW_UP' }] }],
    subject: { reference: `Patient/${clinic.patient.id}` },
    participant: [{ individual: { reference: `Practitioner/${clinic.provider.id}` } }],
    period: { start: TODAY },
    reasonCode: [{ text: 'Headache' }],
    ...overrides,
  }
}

const expressionsOf = (outcome: OperationOutcome) => outcome.issue?.flatMap((issue) => issue.expression ?? [])
const textOf = (outcome: OperationOutcome) =>
  outcome.issue?.map((issue) => issue.details?.text ?? issue.diagnostics).join(' ')

/** An encounter as the server answers one. */
type Stored = Encounter & { id: string }
const stored = async (answer: Promise<unknown>) => (await answer) as Stored

const create = (client: Client, encounter: Encounter, headers: Record<string, string> = {}) =>
  stored(client.create({ resourceType: 'Encounter', body: asSent(encounter), options: { headers } }))

const update = (client: Client, encounter: Stored, headers: Record<string, string> = {}) =>
  stored(
    client.update({
      resourceType: 'Encounter',
      id: encounter.id,
      body: asSent(encounter),
      options: { headers },
    }),
  )

const patch = (client: Client, id: string, jsonPatch: unknown[], headers: Record<string, string> = {}) =>
  stored(
    client.patch({
      resourceType: 'Encounter',
      id,
      jsonPatch: jsonPatch as never,
      options: { headers },
    }),
  )

const read = (client: Client, id: string) => stored(client.read({ resourceType: 'Encounter', id }))

async function restEncounter(clinic: Clinic, id: number | string) {
  const response = await app.inject({ url: `/api/encounters/${id}`, headers: bearer(clinic.doctor.token) })
  expect(response.statusCode, response.body).toBe(200)
  return response.json().data
}

/** A draft note written through REST, SOAP note and all. */
async function restDraft(clinic: Clinic) {
  const response = await app.inject({
    method: 'POST',
    url: '/api/encounters',
    headers: bearer(clinic.doctor.token),
    payload: { patientId: clinic.patient.id, providerId: clinic.provider.id, ...encounterNote() },
  })
  expect(response.statusCode, response.body).toBe(201)
  return response.json().data as { id: number; soapNote: unknown }
}

const auditOf = (organizationId: number) =>
  app.db
    .selectFrom('audit_log')
    .select(['action', 'resource_ids', 'status_code', 'outcome'])
    .where('organization_id', '=', organizationId)
    .where('resource_type', '=', 'encounter')
    .where('action', 'in', ['CREATE', 'UPDATE', 'SIGN'])
    .orderBy('id')
    .execute()

const encounterCount = async (organizationId: number) =>
  Number(
    (
      await app.db
        .selectFrom('encounters')
        .select((eb) => eb.fn.countAll<number>().as('count'))
        .where('organization_id', '=', organizationId)
        .executeTakeFirstOrThrow()
    ).count,
  )

describe('FHIR create of an Encounter', () => {
  it('starts a draft note as POST /api/encounters does: location, ETag, the same event and audit record', async () => {
    const clinic = await newClinic(app)
    const client = doctorOf(clinic)
    const sent = newEncounter(clinic)
    const created = await create(client, sent)
    expect(fhirErrors(created)).toEqual([])
    const headers = headersOf(created)
    expect(headers.get('location')).toBe(`${baseUrl}/Encounter/${created.id}/_history/1`)
    expect(headers.get('etag')).toBe('W/"1"')
    expect(droppedElements(sent, created)).toEqual([])
    expect(created).toMatchObject({
      status: 'in-progress',
      class: { ...AMBULATORY, display: 'ambulatory' },
      type: [{ coding: [{ system: VISIT_TYPE_SYSTEM, code: 'FOLLOW_UP', display: 'Follow-up visit' }] }],
      period: { start: TODAY },
    })
    const readBack = await read(clientFor(clinic.nurse.token), created.id)
    expect(fhirErrors(readBack)).toEqual([])
    expect(readBack).toEqual({ ...created })

    expect(await restEncounter(clinic, created.id)).toMatchObject({
      patientId: clinic.patient.id,
      providerId: clinic.provider.id,
      appointmentId: null,
      encounterDate: TODAY,
      encounterType: 'FOLLOW_UP',
      chiefComplaint: 'Headache',
      soapNote: {
        subjective: null,
        objective: null,
        assessment: { text: null, diagnoses: [] },
        plan: null,
      },
      status: 'DRAFT',
      signedBy: null,
      version: 1,
    })
    const rest = await restDraft(clinic)
    const events = (await outboxEvents(app, clinic.org.id)).filter((event) =>
      event.event_type.startsWith('encounter.'),
    )
    expect(events.map((event) => [event.event_type, event.payload.data])).toEqual(
      [Number(created.id), rest.id].map((id, index) => [
        'encounter.created',
        {
          id,
          patientId: clinic.patient.id,
          providerId: clinic.provider.id,
          appointmentId: null,
          encounterDate: TODAY,
          encounterType: index === 0 ? 'FOLLOW_UP' : 'OFFICE_VISIT',
          status: 'DRAFT',
        },
      ]),
    )
    expect(await auditOf(clinic.org.id)).toEqual(
      [Number(created.id), rest.id].map((id) => ({
        action: 'CREATE',
        resource_ids: [id],
        status_code: 201,
        outcome: 'SUCCESS',
      })),
    )
  })

  it('takes a visit without a type as REST’s default, a telehealth visit for the virtual class', async () => {
    const clinic = await newClinic(app)
    const client = doctorOf(clinic)
    const office = await create(client, newEncounter(clinic, { type: undefined, reasonCode: undefined }))
    const virtual = await create(client, newEncounter(clinic, { type: undefined, class: VIRTUAL }))
    expect((await restEncounter(clinic, office.id)).encounterType).toBe('OFFICE_VISIT')
    expect((await restEncounter(clinic, office.id)).chiefComplaint).toBeNull()
    expect((await restEncounter(clinic, virtual.id)).encounterType).toBe('TELEHEALTH')
    expect(fhirErrors(virtual)).toEqual([])
    expect(virtual.class).toEqual({ ...VIRTUAL, display: 'virtual' })
  })

  it('documents an appointment of the same patient and provider, once (409 for a second note)', async () => {
    const clinic = await newClinic(app)
    const client = doctorOf(clinic)
    const appointment = await booked(app, clinic, daysFromToday(1), '10:00:00')
    const sent = newEncounter(clinic, { appointment: [{ reference: `Appointment/${appointment.id}` }] })
    const created = await create(client, sent)
    expect(created.appointment).toEqual(sent.appointment)
    expect((await restEncounter(clinic, created.id)).appointmentId).toBe(appointment.id)
    const second = await refusal(create(client, sent))
    expect(second.status).toBe(409)
    expect(expressionsOf(second.outcome)).toEqual(['Encounter.appointment'])
    expect(await encounterCount(clinic.org.id)).toBe(1)
  })

  it('refuses what the REST body and the note’s rules refuse, naming the element (422), and stores nothing', async () => {
    const clinic = await newClinic(app)
    const client = doctorOf(clinic)
    const cases: [Encounter, string[], RegExp][] = [
      [newEncounter(clinic, { status: 'finished' }), ['Encounter.status'], /new encounter is a draft/],
      [newEncounter(clinic, { status: 'planned' }), ['Encounter.status'], /planned is no status/],
      [newEncounter(clinic, { status: 'cancelled' }), ['Encounter.status'], /cancelled is no status/],
      [
        newEncounter(clinic, { type: [{ coding: [{ system: VISIT_TYPE_SYSTEM, code: 'SURGERY' }] }] }),
        ['Encounter.type'],
        /must be one of/,
      ],
      [
        newEncounter(clinic, {
          type: [{ coding: [{ system: 'http://snomed.info/sct', code: '185349003' }] }],
        }),
        ['Encounter.type'],
        /needs a coding of/,
      ],
      [newEncounter(clinic, { period: undefined }), ['Encounter.period.start'], /encounterDate|required/],
      [
        newEncounter(clinic, { reasonCode: [{ text: 'x'.repeat(501) }] }),
        ['Encounter.reasonCode.text'],
        /500/,
      ],
      [
        newEncounter(clinic, { subject: { reference: 'Group/1' } }),
        ['Encounter.subject'],
        /as Patient\/<id>/,
      ],
      [
        newEncounter(clinic, { participant: [{ individual: { reference: 'Practitioner/abc' } }] }),
        ['Encounter.participant.individual'],
        /as Practitioner\/<id>/,
      ],
    ]
    for (const [body, expressions, text] of cases) {
      const { status, outcome } = await refusal(create(client, body))
      expect(status, JSON.stringify(body)).toBe(422)
      expect(expressionsOf(outcome), JSON.stringify(body)).toEqual(expressions)
      expect(textOf(outcome), JSON.stringify(body)).toMatch(text)
      expect(fhirErrors(outcome)).toEqual([])
    }
    expect(await encounterCount(clinic.org.id)).toBe(0)
  })

  it('refuses every element the service cannot store (422, naming it), and stores nothing', async () => {
    const clinic = await newClinic(app)
    const client = doctorOf(clinic)
    const [participant] = newEncounter(clinic).participant ?? []
    const cases: [Encounter, string[]][] = [
      [newEncounter(clinic, { period: { start: TODAY, end: TODAY } }), ['Encounter.period.end']],
      [newEncounter(clinic, { period: { start: `${TODAY}T10:00:00Z` } }), ['Encounter.period.start']],
      [
        newEncounter(clinic, { reasonCode: [{ text: 'Headache' }, { text: 'Cough' }] }),
        ['Encounter.reasonCode[1]'],
      ],
      [
        newEncounter(clinic, {
          reasonCode: [{ coding: [{ system: 'http://snomed.info/sct', code: '25064002' }] }],
        }),
        ['Encounter.reasonCode'],
      ],
      [newEncounter(clinic, { class: VIRTUAL }), ['Encounter.class.code']],
      [
        newEncounter(clinic, { identifier: [{ system: 'urn:example', value: '1' }] }),
        ['Encounter.identifier'],
      ],
      [newEncounter(clinic, { priority: { text: 'urgent' } }), ['Encounter.priority']],
      [
        newEncounter(clinic, { subject: { reference: `Patient/${clinic.patient.id}`, display: 'Jane Doe' } }),
        ['Encounter.subject.display'],
      ],
      [
        newEncounter(clinic, {
          participant: [
            { ...participant, period: { start: TODAY } },
            { individual: { reference: 'RelatedPerson/1' } },
          ],
        }),
        ['Encounter.participant[0].period', 'Encounter.participant[1]'],
      ],
    ]
    for (const [body, expressions] of cases) {
      const { status, outcome } = await refusal(create(client, body))
      expect(status, expressions.join()).toBe(422)
      expect(expressionsOf(outcome), JSON.stringify(body)).toEqual(expressions)
    }
    expect(await encounterCount(clinic.org.id)).toBe(0)
  })

  it('refuses another organization’s patient, practitioner or appointment (403), and a reference to nothing (422)', async () => {
    const clinic = await newClinic(app)
    const other = await newClinic(app)
    const client = doctorOf(clinic)
    const theirAppointment = await booked(app, other, daysFromToday(1), '10:00:00')
    const mine = await booked(app, clinic, daysFromToday(1), '11:00:00')
    const otherPatient = await createPatient(app, clinic.nurse)
    const forbidden: Encounter[] = [
      newEncounter(clinic, { subject: { reference: `Patient/${other.patient.id}` } }),
      newEncounter(clinic, {
        participant: [{ individual: { reference: `Practitioner/${other.provider.id}` } }],
      }),
      newEncounter(clinic, { appointment: [{ reference: `Appointment/${theirAppointment.id}` }] }),
    ]
    for (const body of forbidden) {
      expect((await refusal(create(client, body))).status, JSON.stringify(body)).toBe(403)
    }
    const cases: [Encounter, string, RegExp][] = [
      [
        newEncounter(clinic, { subject: { reference: 'Patient/2000000000' } }),
        'Encounter.subject',
        /names Patient\/2000000000, which is no record/,
      ],
      [
        newEncounter(clinic, { participant: [{ individual: { reference: 'Practitioner/2000000000' } }] }),
        'Encounter.participant.individual',
        /names Practitioner\/2000000000, which is no record/,
      ],
      [
        newEncounter(clinic, { appointment: [{ reference: 'Appointment/2000000000' }] }),
        'Encounter.appointment',
        /names Appointment\/2000000000, which is no record/,
      ],
      [
        newEncounter(clinic, {
          subject: { reference: `Patient/${otherPatient}` },
          appointment: [{ reference: `Appointment/${mine.id}` }],
        }),
        'Encounter.appointment',
        /another patient or provider/,
      ],
    ]
    for (const [body, expression, text] of cases) {
      const { status, outcome } = await refusal(create(client, body))
      expect(status, expression).toBe(422)
      expect(expressionsOf(outcome)).toEqual([expression])
      expect(textOf(outcome)).toMatch(text)
    }
    expect(await encounterCount(clinic.org.id)).toBe(0)
  })

  it('refuses another resource type than the URL names (400)', async () => {
    const clinic = await newClinic(app)
    const response = await fetch(`${baseUrl}/Encounter`, {
      method: 'POST',
      headers: { ...bearer(clinic.doctor.token), 'content-type': 'application/fhir+json' },
      body: JSON.stringify({ ...newEncounter(clinic), resourceType: 'Appointment' }),
    })
    expect(response.status).toBe(400)
    expect(await encounterCount(clinic.org.id)).toBe(0)
  })

  it('with If-None-Exist, answers the one match instead of starting another note', async () => {
    const clinic = await newClinic(app)
    const client = doctorOf(clinic)
    const sent = newEncounter(clinic)
    const first = await create(client, sent)
    const again = await create(client, sent, {
      'if-none-exist': `patient=${clinic.patient.id}&date=${TODAY}`,
    })
    expect([again.id, headersOf(again).get('etag')]).toEqual([first.id, 'W/"1"'])
    expect(await encounterCount(clinic.org.id)).toBe(1)
  })
})

describe('FHIR update and patch of an Encounter', () => {
  it('edits a draft with If-Match as PUT /api/encounters/{id} does, keeping its SOAP note; a stale one is 412; unchanged makes no version', async () => {
    const clinic = await newClinic(app)
    const client = doctorOf(clinic)
    const rest = await restDraft(clinic)
    const current = await read(client, String(rest.id))
    const yesterday = daysFromToday(-1)
    const edited = await update(
      client,
      {
        ...current,
        period: { start: yesterday },
        type: [{ coding: [{ system: VISIT_TYPE_SYSTEM, code: 'CONSULTATION' }] }],
        reasonCode: [{ text: 'Migraine' }],
      },
      { 'if-match': 'W/"1"' },
    )
    expect(edited).toMatchObject({
      id: current.id,
      meta: { versionId: '2' },
      period: { start: yesterday },
      reasonCode: [{ text: 'Migraine' }],
      status: 'in-progress',
    })
    expect(headersOf(edited).get('etag')).toBe('W/"2"')
    expect(fhirErrors(edited)).toEqual([])
    expect(await restEncounter(clinic, rest.id)).toMatchObject({
      encounterDate: yesterday,
      encounterType: 'CONSULTATION',
      chiefComplaint: 'Migraine',
      soapNote: rest.soapNote,
      status: 'DRAFT',
      version: 2,
    })

    const stale = await refusal(update(client, { ...edited, reasonCode: undefined }, { 'if-match': 'W/"1"' }))
    expect(stale.status).toBe(412)

    const again = await read(client, current.id)
    const unchanged = await update(client, again)
    expect(unchanged).toEqual({ ...again })
    expect(unchanged.meta?.versionId).toBe('2')
    const unchangedStale = await refusal(update(client, again, { 'if-match': 'W/"1"' }))
    expect(unchangedStale.status).toBe(412)

    const cleared = await update(client, { ...again, reasonCode: undefined })
    expect([cleared.meta?.versionId, cleared.reasonCode]).toEqual(['3', undefined])
    expect(await restEncounter(clinic, rest.id)).toMatchObject({
      chiefComplaint: null,
      soapNote: rest.soapNote,
    })

    const events = await outboxEvents(app, clinic.org.id)
    expect(events.map((event) => event.event_type)).toEqual(['patient.created', 'encounter.created'])
    const updates = (await auditOf(clinic.org.id)).filter((row) => row.action === 'UPDATE')
    // The edit, the stale one, the unchanged one (changing nothing), its stale twin, the clearing.
    expect(updates).toEqual(
      [200, 412, 200, 412, 200].map((status_code) => ({
        action: 'UPDATE',
        resource_ids: [rest.id],
        status_code,
        outcome: status_code === 200 ? 'SUCCESS' : 'REJECTED',
      })),
    )
  })

  it('signs the note on an update to finished, under the sign route’s rules and audit; the signed note is then immutable (409)', async () => {
    const clinic = await newClinic(app)
    const client = doctorOf(clinic)
    const created = await create(client, newEncounter(clinic))
    const signed = await update(client, { ...created, status: 'finished' }, { 'if-match': 'W/"1"' })
    expect([signed.status, signed.meta?.versionId]).toEqual(['finished', '2'])
    expect(fhirErrors(signed)).toEqual([])
    expect(await restEncounter(clinic, created.id)).toMatchObject({
      status: 'SIGNED',
      signedBy: clinic.doctor.id,
      version: 2,
    })
    expect(await auditOf(clinic.org.id)).toEqual([
      { action: 'CREATE', resource_ids: [Number(created.id)], status_code: 201, outcome: 'SUCCESS' },
      { action: 'SIGN', resource_ids: [Number(created.id)], status_code: 200, outcome: 'SUCCESS' },
    ])

    const unchanged = await update(client, await read(client, created.id))
    expect(unchanged.meta?.versionId).toBe('2')
    const changes: Stored[] = [
      { ...signed, reasonCode: [{ text: 'Migraine' }] },
      { ...signed, period: { start: daysFromToday(-1) } },
      { ...signed, status: 'in-progress' },
    ]
    for (const change of changes) {
      const refused = await refusal(update(client, change))
      expect(refused.status, JSON.stringify(change)).toBe(409)
      expect(textOf(refused.outcome)).toMatch(/SIGNED and cannot be edited/)
    }
    const restPut = await app.inject({
      method: 'PUT',
      url: `/api/encounters/${created.id}`,
      headers: bearer(clinic.doctor.token),
      payload: { encounterDate: TODAY, encounterType: 'FOLLOW_UP', chiefComplaint: 'Migraine' },
    })
    expect(restPut.statusCode).toBe(409)
    const patched = await refusal(
      patch(client, created.id, [{ op: 'replace', path: '/reasonCode/0/text', value: 'Migraine' }]),
    )
    expect(patched.status).toBe(409)

    // Amended by an addendum, it still reads finished, and written back it changes nothing.
    const addendum = await app.inject({
      method: 'POST',
      url: `/api/encounters/${created.id}/addendum`,
      headers: bearer(clinic.doctor.token),
      payload: { text: 'Called back: better' },
    })
    expect(addendum.statusCode).toBe(200)
    const amended = await read(client, created.id)
    expect([amended.status, amended.meta?.versionId]).toEqual(['finished', '3'])
    expect(await update(client, amended)).toEqual({ ...amended })
    expect(await restEncounter(clinic, created.id)).toMatchObject({ status: 'AMENDED', version: 3 })
  })

  it('edits and signs in one update, or neither when the caller may edit but not sign (403)', async () => {
    const clinic = await newClinic(app)
    const created = await create(doctorOf(clinic), newEncounter(clinic))
    // An administrator who also treats patients may correct anyone's draft, but signs only their own.
    const chief = await clinic.org.user('PROVIDER', 'ADMIN')
    const refused = await refusal(
      update(clientFor(chief.token), { ...created, status: 'finished', reasonCode: [{ text: 'Migraine' }] }),
    )
    expect(refused.status).toBe(403)
    expect(textOf(refused.outcome)).toMatch(/Only the encounter’s provider may sign/)
    expect(await restEncounter(clinic, created.id)).toMatchObject({
      chiefComplaint: 'Headache',
      status: 'DRAFT',
      version: 1,
    })
    const corrected = await update(clientFor(chief.token), { ...created, reasonCode: [{ text: 'Migraine' }] })
    expect(corrected.meta?.versionId).toBe('2')

    const done = await update(doctorOf(clinic), {
      ...corrected,
      status: 'finished',
      reasonCode: [{ text: 'Aura' }],
    })
    expect([done.status, done.reasonCode, done.meta?.versionId]).toEqual([
      'finished',
      [{ text: 'Aura' }],
      '4',
    ])
    expect(await restEncounter(clinic, created.id)).toMatchObject({
      chiefComplaint: 'Aura',
      status: 'SIGNED',
    })
    const audit = await auditOf(clinic.org.id)
    expect(audit.map((row) => [row.action, row.status_code])).toEqual([
      ['CREATE', 201],
      ['UPDATE', 403],
      ['UPDATE', 200],
      ['UPDATE', 200],
      ['SIGN', 200],
    ])
  })

  it('refuses another patient, practitioner or appointment for the note (422), another organization’s note (403), and an id not the URL’s (400)', async () => {
    const clinic = await newClinic(app)
    const client = doctorOf(clinic)
    const created = await create(client, newEncounter(clinic))
    const otherPatient = await createPatient(app, clinic.nurse)
    const appointment = await booked(app, clinic, daysFromToday(1), '10:00:00')
    const cases: [Stored, string][] = [
      [{ ...created, subject: { reference: `Patient/${otherPatient}` } }, 'Encounter.subject'],
      [
        { ...created, participant: [{ individual: { reference: 'Practitioner/2000000000' } }] },
        'Encounter.participant.individual',
      ],
      [
        { ...created, appointment: [{ reference: `Appointment/${appointment.id}` }] },
        'Encounter.appointment',
      ],
    ]
    for (const [body, expression] of cases) {
      const { status, outcome } = await refusal(update(client, body))
      expect(status, expression).toBe(422)
      expect(expressionsOf(outcome)).toEqual([expression])
    }
    const stranger = await newClinic(app)
    expect((await refusal(update(doctorOf(stranger), created))).status).toBe(403)
    const mismatch = await refusal(
      client.update({
        resourceType: 'Encounter',
        id: created.id,
        body: asSent({ ...created, id: '999999' }),
      }),
    )
    expect(mismatch.status).toBe(400)
    const wrongType = await refusal(
      client.update({
        resourceType: 'Encounter',
        id: created.id,
        body: asSent({ ...created, resourceType: 'Appointment' }),
      }),
    )
    expect(wrongType.status).toBe(400)
    const unstorable = await refusal(update(client, { ...created, period: { start: TODAY, end: TODAY } }))
    expect([unstorable.status, expressionsOf(unstorable.outcome)]).toEqual([422, ['Encounter.period.end']])
    expect(await restEncounter(clinic, created.id)).toMatchObject({
      patientId: clinic.patient.id,
      version: 1,
    })
  })

  it('patches with JSON Patch, checked like an update: a new reason edits, finished signs', async () => {
    const clinic = await newClinic(app)
    const client = doctorOf(clinic)
    const created = await create(client, newEncounter(clinic))
    const patched = await patch(client, created.id, [
      { op: 'test', path: '/status', value: 'in-progress' },
      { op: 'replace', path: '/reasonCode', value: [{ text: 'Dizziness' }] },
    ])
    expect([patched.meta?.versionId, patched.reasonCode]).toEqual(['2', [{ text: 'Dizziness' }]])
    const unstorable = await refusal(
      patch(client, created.id, [{ op: 'add', path: '/serviceType', value: { text: 'Neurology' } }]),
    )
    expect([unstorable.status, expressionsOf(unstorable.outcome)]).toEqual([422, ['Encounter.serviceType']])
    const unknownStatus = await refusal(
      patch(client, created.id, [{ op: 'replace', path: '/status', value: 'arrived' }]),
    )
    expect([unknownStatus.status, expressionsOf(unknownStatus.outcome)]).toEqual([422, ['Encounter.status']])
    const stale = await refusal(
      patch(client, created.id, [{ op: 'replace', path: '/status', value: 'finished' }], {
        'if-match': 'W/"1"',
      }),
    )
    expect(stale.status).toBe(412)
    const signed = await patch(client, created.id, [{ op: 'replace', path: '/status', value: 'finished' }], {
      'if-match': 'W/"2"',
    })
    expect([signed.status, signed.meta?.versionId]).toEqual(['finished', '3'])
    expect(fhirErrors(signed)).toEqual([])
    expect(await restEncounter(clinic, created.id)).toMatchObject({
      chiefComplaint: 'Dizziness',
      status: 'SIGNED',
    })
  })

  it('updates conditionally on a search matching one note, and starts one on none', async () => {
    const clinic = await newClinic(app)
    const client = doctorOf(clinic)
    const searchParams = { patient: String(clinic.patient.id), date: TODAY }
    const sent = newEncounter(clinic)
    const created = await stored(
      client.update({ resourceType: 'Encounter', searchParams, body: asSent(sent) }),
    )
    expect([created.meta?.versionId, headersOf(created).get('etag')]).toEqual(['1', 'W/"1"'])
    const updated = await stored(
      client.update({
        resourceType: 'Encounter',
        searchParams,
        body: asSent({ ...sent, reasonCode: [{ text: 'Check-up' }] }),
      }),
    )
    expect([updated.id, updated.meta?.versionId, updated.reasonCode]).toEqual([
      created.id,
      '2',
      [{ text: 'Check-up' }],
    ])
    expect(fhirErrors(updated)).toEqual([])
    expect(await encounterCount(clinic.org.id)).toBe(1)
  })
})

describe('encounters in a transaction Bundle', () => {
  const transaction = (entry: BundleEntry[]) =>
    ({ resourceType: 'Bundle', type: 'transaction', entry }) as unknown as FhirResource
  const patientUrn = 'urn:uuid:7d1e2f3a-4b5c-4d6e-8f70-8192a3b4c5d6'
  const newPatient: BundleEntry = {
    fullUrl: patientUrn,
    resource: {
      resourceType: 'Patient',
      name: [{ family: 'Hopper', given: ['Grace'] }],
      gender: 'female',
      birthDate: '1906-12-09',
    },
    request: { method: 'POST', url: 'Patient' },
  }

  it('signs and starts notes with the Bundle’s other entries, and rolls them back with it', async () => {
    const clinic = await newClinic(app)
    const client = doctorOf(clinic)
    const draft = await create(client, newEncounter(clinic))
    const other = await create(client, newEncounter(clinic, { reasonCode: [{ text: 'Cough' }] }))
    const signing: BundleEntry = {
      resource: { ...draft, status: 'finished', reasonCode: [{ text: 'Migraine' }] },
      request: { method: 'PUT', url: `Encounter/${draft.id}` },
    }
    const starting: BundleEntry = {
      resource: newEncounter(clinic, { subject: { reference: patientUrn } }),
      request: { method: 'POST', url: 'Encounter' },
    }
    // Run last (PUTs follow POSTs, in the Bundle's order), after the signature: 412.
    const stale: BundleEntry = {
      resource: { ...other, reasonCode: [{ text: 'Fever' }] },
      request: { method: 'PUT', url: `Encounter/${other.id}`, ifMatch: 'W/"7"' },
    }
    const before = await outboxEvents(app, clinic.org.id)
    const refused = await refusal(
      client.transaction({ body: transaction([signing, starting, newPatient, stale]) }),
    )
    expect(refused.status).toBe(412)
    expect(expressionsOf(refused.outcome)).toEqual(['Bundle.entry[3]'])
    expect(await restEncounter(clinic, draft.id)).toMatchObject({
      chiefComplaint: 'Headache',
      status: 'DRAFT',
      version: 1,
    })
    expect(await encounterCount(clinic.org.id)).toBe(2)
    expect(await outboxEvents(app, clinic.org.id)).toEqual(before)
    expect((await auditOf(clinic.org.id)).map((row) => row.action)).toEqual(['CREATE', 'CREATE'])

    const done = (await client.transaction({
      body: transaction([signing, starting, newPatient]),
    })) as unknown as Bundle
    expect(fhirErrors(done)).toEqual([])
    expect(done.entry?.map((entry) => entry.response?.status)).toEqual([
      '200 OK',
      '201 Created',
      '201 Created',
    ])
    const patientId = Number(done.entry?.[2]?.response?.location?.split('/')[1])
    expect(await restEncounter(clinic, draft.id)).toMatchObject({
      chiefComplaint: 'Migraine',
      status: 'SIGNED',
    })
    expect(await restEncounter(clinic, String(done.entry?.[1]?.resource?.id))).toMatchObject({
      patientId,
      status: 'DRAFT',
    })
    const events = (await outboxEvents(app, clinic.org.id)).slice(before.length)
    expect(events.map((event) => event.event_type)).toEqual(['patient.created', 'encounter.created'])
    expect((await auditOf(clinic.org.id)).map((row) => row.action)).toEqual([
      'CREATE',
      'CREATE',
      'CREATE',
      'UPDATE',
      'SIGN',
    ])
  })
})

describe('who may write encounters', () => {
  it('needs a role that writes visit notes; a nurse reads them', async () => {
    const clinic = await newClinic(app)
    const sent = newEncounter(clinic)
    for (const user of [clinic.nurse, clinic.admin, await clinic.org.user('FRONT_DESK')]) {
      expect((await refusal(create(clientFor(user.token), sent))).status, user.roles.join()).toBe(403)
    }
    const created = await create(doctorOf(clinic), sent)
    const nurse = clientFor(clinic.nurse.token)
    expect(
      (await refusal(update(nurse, { ...(await read(nurse, created.id)), status: 'finished' }))).status,
    ).toBe(403)
    expect((await restEncounter(clinic, created.id)).status).toBe('DRAFT')
  })

  it('keeps a patient/ scope to its launch patient’s notes', async () => {
    const clinic = await newClinic(app)
    const other = await createPatient(app, clinic.nurse)
    const client = clientFor(
      tokenFor(app, clinic.doctor, undefined, {
        scopes: ['patient/Encounter.cru'],
        patient: String(clinic.patient.id),
      }),
    )
    const mine = await create(client, newEncounter(clinic))
    expect(mine.id).toBeDefined()
    const theirs = newEncounter(clinic, { subject: { reference: `Patient/${other}` } })
    expect((await refusal(create(client, theirs))).status).toBe(403)
    const theirsStarted = await create(doctorOf(clinic), theirs)
    expect((await refusal(update(client, { ...theirsStarted, status: 'finished' }))).status).toBe(403)
    const readOnly = clientFor(
      tokenFor(app, clinic.doctor, undefined, { scopes: ['user/Encounter.rs'], patient: undefined }),
    )
    expect((await refusal(create(readOnly, newEncounter(clinic)))).status).toBe(403)
  })

  it('never deletes a note (405), and says so in the CapabilityStatement', async () => {
    const clinic = await newClinic(app)
    const client = doctorOf(clinic)
    const created = await create(client, newEncounter(clinic))
    const deleted = await refusal(client.delete({ resourceType: 'Encounter', id: created.id }))
    expect(deleted.status).toBe(405)
    const conditional = await fetch(`${baseUrl}/Encounter?patient=${clinic.patient.id}`, {
      method: 'DELETE',
      headers: bearer(clinic.doctor.token),
    })
    expect(conditional.status).toBe(405)
    expect(await encounterCount(clinic.org.id)).toBe(1)

    const statement = (await new Client({ baseUrl }).capabilityStatement()) as unknown as CapabilityStatement
    const declared = statement.rest?.[0]?.resource?.find((resource) => resource.type === 'Encounter')
    const codes = declared?.interaction?.map((interaction) => interaction.code) ?? []
    expect(codes).toEqual(expect.arrayContaining(['read', 'search-type', 'create', 'update', 'patch']))
    expect(codes).not.toContain('delete')
    expect([declared?.conditionalCreate, declared?.conditionalUpdate, declared?.conditionalDelete]).toEqual([
      true,
      true,
      'not-supported',
    ])
    const smart = await fetch(`${baseUrl}/.well-known/smart-configuration`)
    const { scopes_supported } = (await smart.json()) as { scopes_supported: string[] }
    expect(scopes_supported).toEqual(
      expect.arrayContaining(['user/Encounter.cud', 'patient/Encounter.write', 'system/Encounter.cud']),
    )
  })
})

describe('FHIR writes of generated encounters', () => {
  const VISIT_TYPES = [
    'OFFICE_VISIT',
    'NEW_PATIENT',
    'FOLLOW_UP',
    'TELEHEALTH',
    'ANNUAL_PHYSICAL',
    'CONSULTATION',
    'PROCEDURE',
  ] as const
  const complaint = fc.stringMatching(/^[A-Z][a-z]{2,12}( [a-z]{2,12}){0,3}$/)
  const encounter = fc.record(
    {
      visitType: fc.constantFrom(...VISIT_TYPES),
      typed: fc.boolean(),
      date: days('2000-01-01', '2035-12-31'),
      complaint: fc.option(complaint, { nil: undefined }),
      performerTyped: fc.boolean(),
    },
    { requiredKeys: ['visitType', 'typed', 'date', 'performerTyped'] },
  )

  it('stores every element of each valid encounter it is sent, reads back a valid resource, and takes it back unchanged', async () => {
    const clinic = await newClinic(app)
    const client = doctorOf(clinic)
    await fc.assert(
      fc.asyncProperty(encounter, async (generated) => {
        const visitType = generated.typed ? generated.visitType : undefined
        const sent: Encounter = {
          resourceType: 'Encounter',
          status: 'in-progress',
          class: generated.visitType === 'TELEHEALTH' ? VIRTUAL : AMBULATORY,
          ...(visitType ? { type: [{ coding: [{ system: VISIT_TYPE_SYSTEM, code: visitType }] }] } : {}),
          subject: { reference: `Patient/${clinic.patient.id}` },
          participant: [
            {
              ...(generated.performerTyped
                ? {
                    type: [
                      {
                        coding: [
                          {
                            system: 'http://terminology.hl7.org/CodeSystem/v3-ParticipationType',
                            code: 'PPRF',
                          },
                        ],
                      },
                    ],
                  }
                : {}),
              individual: { reference: `Practitioner/${clinic.provider.id}` },
            },
          ],
          period: { start: generated.date },
          ...(generated.complaint ? { reasonCode: [{ text: generated.complaint }] } : {}),
        }
        const { id } = await expectStoredAsSent(client, sent)
        const rest = await restEncounter(clinic, id)
        expect(rest).toMatchObject({
          encounterDate: generated.date,
          encounterType:
            generated.typed || generated.visitType === 'TELEHEALTH' ? generated.visitType : 'OFFICE_VISIT',
          chiefComplaint: generated.complaint ?? null,
          status: 'DRAFT',
        })
      }),
      { numRuns: 25 },
    )
  })
})
