import type {
  Bundle,
  CapabilityStatement,
  Observation,
  ObservationComponent,
  OperationOutcome,
  Quantity,
} from '@medplum/fhirtypes'
import fc from 'fast-check'
import { Client } from 'fhir-kit-client'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { droppedElements } from '../../../src/modules/fhir/stored-elements.js'
import { bearer, createPatient, newOrganization, type TestUser } from '../../helpers/factories.js'
import { asSent, headersOf, listeningFhirApp, refusal } from '../../helpers/fhir-client.js'
import { expectStoredAsSent } from '../../helpers/fhir-properties.js'
import { fhirErrors } from '../../helpers/fhir-validator.js'

// FHIR create, update, patch and delete of Observation: vital signs panels and lab results, each
// through the clinical routes of its kind, driven by fhir-kit-client.

let app: App
let baseUrl: string

beforeAll(async () => {
  ;({ app, baseUrl } = await listeningFhirApp())
})
afterAll(async () => {
  await app.close()
})

const clientFor = (token: string) => new Client({ baseUrl, bearerToken: token })
/** A resource fhir-kit-client answered with, as an Observation. */
const received = (result: unknown) => result as Observation & { id: string }
const expressionsOf = (outcome: OperationOutcome) => outcome.issue?.flatMap((issue) => issue.expression ?? [])

const LOINC = 'http://loinc.org'
const UCUM = 'http://unitsofmeasure.org'
const CATEGORY = 'http://terminology.hl7.org/CodeSystem/observation-category'
const INTERPRETATION = 'http://terminology.hl7.org/CodeSystem/v3-ObservationInterpretation'
const DATA_ABSENT = 'http://terminology.hl7.org/CodeSystem/data-absent-reason'

const loinc = (code: string) => ({ coding: [{ system: LOINC, code }] })
const category = (code: string) => [{ coding: [{ system: CATEGORY, code }] }]
const ucum = (value: number, code: string): Quantity => ({ value, system: UCUM, code })

/** The vital signs a panel holds, as the REST API takes them (temperature in °C). */
interface Vitals {
  systolic?: number
  diastolic?: number
  heartRate?: number
  respiratoryRate?: number
  temperature?: number
  spo2?: number
  heightCm?: number
  weightKg?: number
  bmi?: number
  painScore?: number
}

// Each measurement of a panel: its member's id, LOINC code and UCUM unit.
const MEMBERS: Record<Exclude<keyof Vitals, 'systolic' | 'diastolic'>, [string, string, string]> = {
  heartRate: ['heart-rate', '8867-4', '/min'],
  respiratoryRate: ['respiratory-rate', '9279-1', '/min'],
  temperature: ['body-temperature', '8310-5', 'Cel'],
  spo2: ['oxygen-saturation', '2708-6', '%'],
  heightCm: ['body-height', '8302-2', 'cm'],
  weightKg: ['body-weight', '29463-7', 'kg'],
  bmi: ['bmi', '39156-5', 'kg/m2'],
  painScore: ['pain-severity', '72514-3', '{score}'],
}

const pressurePart = (code: string, value: number | undefined): ObservationComponent =>
  value === undefined
    ? { code: loinc(code), dataAbsentReason: { coding: [{ system: DATA_ABSENT, code: 'unknown' }] } }
    : { code: loinc(code), valueQuantity: ucum(value, 'mm[Hg]') }

/**
 * A vital signs panel as an integrator writes one, in the shape a read answers: one contained
 * Observation per measurement, each referenced by the panel's hasMember.
 */
function vitalSignsPanel(
  patientId: number,
  vitals: Vitals,
  { effective = '2024-03-01T09:15:00.000Z', status = 'final' as Observation['status'] } = {},
): Observation {
  const shared = {
    resourceType: 'Observation' as const,
    status,
    category: category('vital-signs'),
    subject: { reference: `Patient/${patientId}` },
    effectiveDateTime: effective,
  }
  const members: Observation[] = []
  if (vitals.systolic !== undefined || vitals.diastolic !== undefined) {
    members.push({
      ...shared,
      id: 'blood-pressure',
      code: loinc('85354-9'),
      component: [pressurePart('8480-6', vitals.systolic), pressurePart('8462-4', vitals.diastolic)],
    })
  }
  for (const [field, [id, code, unit]] of Object.entries(MEMBERS)) {
    const value = vitals[field as keyof Vitals]
    if (value !== undefined)
      members.push({ ...shared, id, code: loinc(code), valueQuantity: ucum(value, unit) })
  }
  return {
    ...shared,
    code: { ...loinc('85353-1'), text: 'Vital signs' },
    contained: members,
    hasMember: members.map(({ id }) => ({ reference: `#${id}` })),
  }
}

const memberOf = (panel: Observation, id: string) =>
  (panel.contained as Observation[]).find((member) => member.id === id) as Observation

/** The resource with its status, and that of each of a panel's members, set to `status`. */
const withStatus = (resource: Observation, status: Observation['status']): Observation => ({
  ...resource,
  status,
  ...(resource.contained
    ? { contained: (resource.contained as Observation[]).map((member) => ({ ...member, status })) }
    : {}),
})

// The local id of each measurement's Observation in a written panel, by its LOINC code.
const LOCAL_IDS: Record<string, string> = {
  '85354-9': 'blood-pressure',
  '59408-5': 'oxygen-saturation',
  ...Object.fromEntries(Object.values(MEMBERS).map(([id, code]) => [code, id])),
}

const storedId = (reference: string | undefined) => /^Observation\/(\d+)$/.exec(reference ?? '')?.[1]

/**
 * A vital signs panel as read (hasMember references to its measurements' own Observations) in the
 * form a panel is written, to compare with one sent: each measurement read and contained under its
 * local id, with the panel's status. Any other Observation as it is.
 */
async function writtenForm(client: Client, resource: Observation): Promise<Observation> {
  const ids = (resource.hasMember ?? []).flatMap(({ reference }) => storedId(reference) ?? [])
  if (ids.length === 0) return resource
  const members = await Promise.all(
    ids.map(async (id) => received(await client.read({ resourceType: 'Observation', id }))),
  )
  const contained = members.map(({ meta: _, ...member }) => ({
    ...member,
    id: LOCAL_IDS[member.code.coding?.[0]?.code ?? ''],
    status: resource.status,
  }))
  return { ...resource, contained, hasMember: contained.map(({ id }) => ({ reference: `#${id}` })) }
}

function labResult(patientId: number, overrides: Partial<Observation> = {}): Observation {
  return {
    resourceType: 'Observation',
    status: 'final',
    category: category('laboratory'),
    code: { ...loinc('2345-7'), text: 'Glucose [Mass/volume] in Serum or Plasma' },
    subject: { reference: `Patient/${patientId}` },
    effectiveDateTime: '2024-03-01T08:00:00.000Z',
    issued: '2024-03-01T10:30:00.000Z',
    valueQuantity: { ...ucum(182, 'mg/dL'), unit: 'mg/dL' },
    interpretation: [{ coding: [{ system: INTERPRETATION, code: 'H' }] }],
    referenceRange: [
      { low: { ...ucum(70, 'mg/dL'), unit: 'mg/dL' }, high: { ...ucum(99, 'mg/dL'), unit: 'mg/dL' } },
    ],
    ...overrides,
  }
}

/** One kind of Observation: a resource as an integrator sends it, and what the REST API shows of it. */
interface ObservationCase {
  name: string
  path: 'vitals' | 'lab-results'
  /** The resource type of its REST routes' audit records. */
  audited: string
  sample(patientId: number): Observation
  rest: Record<string, unknown>
  /** The sample corrected (a correction's status said), and what REST then shows. */
  corrected(resource: Observation): Observation
  restCorrected: Record<string, unknown>
  /** A JSON Patch correcting the sample, and what REST then shows. */
  patch: { op: 'replace'; path: string; value: unknown }[]
  restPatched: Record<string, unknown>
  /** Elements breaking a rule of the record's kind, and the expression of the one at fault. */
  ruleBroken(patientId: number): [Observation, string]
  /** Search criteria that find the sample and nothing else of its patient's. */
  criteria: string
  /** The element a 422 names when the resource as first read is written back after a correction. */
  outdated: string
}

const vitalSigns: ObservationCase = {
  name: 'a vital signs panel',
  path: 'vitals',
  audited: 'vital-signs',
  sample: (patientId) =>
    vitalSignsPanel(patientId, { systolic: 128, diastolic: 82, heartRate: 71, temperature: 36.8 }),
  rest: {
    systolic: 128,
    diastolic: 82,
    heartRate: 71,
    temperatureCelsius: 36.8,
    bmi: null,
    status: 'FINAL',
  },
  // Its measurements written again, contained, the temperature left out (so removed).
  corrected: (panel) => ({
    ...vitalSignsPanel(
      Number(panel.subject?.reference?.split('/')[1]),
      { systolic: 128, diastolic: 82, heartRate: 75 },
      { status: 'amended' },
    ),
    ...(panel.id ? { id: panel.id } : {}),
  }),
  restCorrected: { status: 'AMENDED', temperatureCelsius: null, heartRate: 75 },
  // The panel as read references its measurements, which it keeps as they are.
  patch: [
    { op: 'replace', path: '/effectiveDateTime', value: '2024-03-01T09:20:00.000Z' },
    { op: 'replace', path: '/status', value: 'amended' },
  ],
  restPatched: { heartRate: 71, temperatureCelsius: 36.8, status: 'AMENDED' },
  ruleBroken: (patientId) => [
    vitalSignsPanel(patientId, { systolic: 80, diastolic: 90 }),
    'Observation.contained[0].component[1].valueQuantity',
  ],
  criteria: 'code=85353-1',
  // It references a measurement the correction removed.
  outdated: 'Observation.hasMember',
}

const lab: ObservationCase = {
  name: 'a lab result',
  path: 'lab-results',
  audited: 'lab-result',
  sample: (patientId) => labResult(patientId),
  rest: {
    testCode: '2345-7',
    testName: 'Glucose [Mass/volume] in Serum or Plasma',
    value: 182,
    unit: 'mg/dL',
    referenceRange: { low: 70, high: 99, text: null },
    interpretation: 'HIGH',
    status: 'FINAL',
    specimenCollectedAt: '2024-03-01T08:00:00.000Z',
    resultedAt: '2024-03-01T10:30:00.000Z',
  },
  corrected: (resource) => ({
    ...resource,
    status: 'corrected',
    valueQuantity: { ...ucum(95, 'mg/dL'), unit: 'mg/dL' },
    interpretation: [{ coding: [{ system: INTERPRETATION, code: 'N' }] }],
  }),
  restCorrected: { value: 95, interpretation: 'NORMAL', status: 'CORRECTED' },
  patch: [
    { op: 'replace', path: '/valueQuantity/value', value: 190 },
    { op: 'replace', path: '/status', value: 'corrected' },
  ],
  restPatched: { value: 190, status: 'CORRECTED', interpretation: 'HIGH' },
  ruleBroken: (patientId) => [
    labResult(patientId, { code: { ...loinc('2345-8'), text: 'Glucose' } }),
    'Observation.code.coding',
  ],
  criteria: 'category=laboratory',
  outdated: 'Observation.status',
}

const CASES = [vitalSigns, lab]

/** A practice with a provider (who writes every clinical record) and one of its patients. */
async function practice() {
  const org = await newOrganization(app)
  const provider = await org.user('PROVIDER')
  const patientId = await createPatient(app, provider)
  return { org, provider, patientId, client: clientFor(provider.token) }
}

async function restRecord(user: TestUser, patientId: number, path: string, id: string | number) {
  const response = await app.inject({
    url: `/api/patients/${patientId}/${path}/${id}`,
    headers: bearer(user.token),
  })
  expect(response.statusCode, response.body).toBe(200)
  return response.json().data
}

/** The audit records of the changes made to records of the type, oldest first. */
const auditRows = (organizationId: number, resourceType: string) =>
  app.db
    .selectFrom('audit_log')
    .select(['action', 'resource_type', 'resource_ids', 'patient_id', 'status_code', 'outcome'])
    .where('organization_id', '=', organizationId)
    .where('resource_type', '=', resourceType)
    .where('action', '!=', 'READ')
    .orderBy('id')
    .execute()

const eventsOf = async (organizationId: number) =>
  (
    await app.db
      .selectFrom('outbox_events')
      .select('event_type')
      .where('organization_id', '=', organizationId)
      .execute()
  ).map((event) => event.event_type)

const keptVersions = async (id: number | string) =>
  (
    await app.db
      .selectFrom('record_history')
      .select('version')
      .where('table_name', '=', 'clinical_records')
      .where('record_id', '=', Number(id))
      .execute()
  ).length

/** The records stored, but the measurements of vital signs panels (kept with their panels). */
const storedRecords = (organizationId: number) =>
  app.db
    .selectFrom('clinical_records')
    .select(['id', 'kind'])
    .where('organization_id', '=', organizationId)
    .where('kind', '!=', 'VITAL_SIGN')
    .execute()

describe.each(CASES)('FHIR writes of $name', (type) => {
  it('creates the record as the REST route would: read back valid, the same in REST, the same audit record, no event', async () => {
    const { org, provider, patientId, client } = await practice()
    const sent = type.sample(patientId)
    const created = received(await client.create({ resourceType: 'Observation', body: asSent(sent) }))
    expect(fhirErrors(created)).toEqual([])
    const { id } = created
    expect(created.meta?.versionId).toBe('1')
    expect(headersOf(created).get('location')).toBe(`${baseUrl}/Observation/${id}/_history/1`)
    expect(headersOf(created).get('etag')).toBe('W/"1"')
    const read = received(await client.read({ resourceType: 'Observation', id }))
    expect(fhirErrors(read)).toEqual([])
    expect(read).toEqual(created)
    expect(droppedElements(sent, await writtenForm(client, read))).toEqual([])
    expect(await restRecord(provider, patientId, type.path, id)).toMatchObject({
      ...type.rest,
      patientId,
      enteredInError: null,
      version: 1,
    })

    const viaRest = await app.inject({
      method: 'POST',
      url: `/api/patients/${patientId}/${type.path}`,
      headers: bearer(provider.token),
      payload:
        type.path === 'vitals'
          ? { heartRate: 64 }
          : { testCode: '718-7', testName: 'Hemoglobin', value: 13.5 },
    })
    expect(viaRest.statusCode, viaRest.body).toBe(201)
    const [fhir, rest] = await auditRows(org.id, type.audited)
    expect(rest).toMatchObject({ action: 'CREATE', status_code: 201, patient_id: patientId })
    expect(fhir).toEqual({ ...rest, resource_ids: [Number(id)] })
    // The read names the patient too, as a REST read's path does: the trail's patient filter finds it.
    const reads = await app.db
      .selectFrom('audit_log')
      .select(['resource_ids', 'patient_id'])
      .where('organization_id', '=', org.id)
      .where('action', '=', 'READ')
      .where('resource_type', '=', type.audited)
      .execute()
    expect(reads).toContainEqual({ resource_ids: [Number(id)], patient_id: patientId })
    // The patient's registration only: the clinical routes emit no event.
    expect(await eventsOf(org.id)).toEqual(['patient.created'])
  })

  it('updates with If-Match, refuses a stale one (412), and a resource written back as read changes nothing', async () => {
    const { org, provider, patientId, client } = await practice()
    const created = received(
      await client.create({ resourceType: 'Observation', body: asSent(type.sample(patientId)) }),
    )
    const { id } = created
    const unchanged = received(
      await client.update({ resourceType: 'Observation', id, body: asSent(created) }),
    )
    expect(unchanged.meta).toEqual(created.meta)

    const updated = received(
      await client.update({
        resourceType: 'Observation',
        id,
        body: asSent(type.corrected(created)),
        options: { headers: { 'if-match': 'W/"1"' } },
      }),
    )
    expect(updated.meta?.versionId).toBe('2')
    expect(headersOf(updated).get('etag')).toBe('W/"2"')
    expect(fhirErrors(updated)).toEqual([])
    expect(droppedElements(type.corrected(created), await writtenForm(client, updated))).toEqual([])
    expect(await restRecord(provider, patientId, type.path, id)).toMatchObject({
      ...type.restCorrected,
      version: 2,
    })

    const stale = await refusal(
      client.update({
        resourceType: 'Observation',
        id,
        body: asSent(type.corrected(created)),
        options: { headers: { 'if-match': 'W/"1"' } },
      }),
    )
    expect(stale.status).toBe(412)

    // A correction, written back as read, is no new one.
    const read = received(await client.read({ resourceType: 'Observation', id }))
    const again = received(await client.update({ resourceType: 'Observation', id, body: asSent(read) }))
    expect(again.meta).toEqual(read.meta)
    expect(await keptVersions(id)).toBe(1)
    const updates = (await auditRows(org.id, type.audited)).filter((row) => row.action === 'UPDATE')
    expect(updates.map((row) => row.status_code)).toEqual([200, 200, 412, 200])
    expect(await eventsOf(org.id)).toEqual(['patient.created'])

    // A record changed without the status a correction gives it would not be stored as sent.
    const unmarked = await refusal(client.update({ resourceType: 'Observation', id, body: asSent(created) }))
    expect(unmarked.status).toBe(422)
    expect(expressionsOf(unmarked.outcome)).toContain(type.outdated)
  })

  it('patches with JSON Patch, as a correction', async () => {
    const { provider, patientId, client } = await practice()
    const created = received(
      await client.create({ resourceType: 'Observation', body: asSent(type.sample(patientId)) }),
    )
    const { id } = created
    const patched = received(await client.patch({ resourceType: 'Observation', id, jsonPatch: type.patch }))
    expect(patched.meta?.versionId).toBe('2')
    expect(fhirErrors(patched)).toEqual([])
    expect(await restRecord(provider, patientId, type.path, id)).toMatchObject(type.restPatched)
    const unstorable = await refusal(
      client.patch({
        resourceType: 'Observation',
        id,
        jsonPatch: [{ op: 'add', path: '/bodySite', value: { text: 'Left arm' } }],
      }),
    )
    expect(unstorable.status).toBe(422)
    expect(expressionsOf(unstorable.outcome)).toEqual(['Observation.bodySite'])
  })

  it('deletes by entering the record in error: it stays, withdrawn, in FHIR and REST; again changes nothing', async () => {
    const { org, provider, patientId, client } = await practice()
    const created = received(
      await client.create({ resourceType: 'Observation', body: asSent(type.sample(patientId)) }),
    )
    const { id } = created
    const stale = await refusal(
      client.delete({ resourceType: 'Observation', id, options: { headers: { 'if-match': 'W/"2"' } } }),
    )
    expect(stale.status).toBe(412)
    await client.delete({ resourceType: 'Observation', id, options: { headers: { 'if-match': 'W/"1"' } } })
    const read = received(await client.read({ resourceType: 'Observation', id }))
    expect(fhirErrors(read)).toEqual([])
    expect(read.status).toBe('entered-in-error')
    expect(read.meta?.versionId).toBe('2')
    const rest = await restRecord(provider, patientId, type.path, id)
    expect(rest.enteredInError).toMatchObject({ by: provider.id, reason: 'Deleted through the FHIR API' })
    expect(rest.status).toBe('ENTERED_IN_ERROR')

    await client.delete({ resourceType: 'Observation', id })
    expect(received(await client.read({ resourceType: 'Observation', id })).meta?.versionId).toBe('2')
    // A withdrawn record cannot be corrected, as in REST; written back as read, neither.
    for (const body of [created, read]) {
      expect(
        (await refusal(client.update({ resourceType: 'Observation', id, body: asSent(body) }))).status,
      ).toBe(409)
    }
    const withdrawals = (await auditRows(org.id, type.audited)).filter((row) => row.action === 'UPDATE')
    expect(withdrawals.map((row) => [row.resource_ids, row.status_code])).toEqual([
      [[Number(id)], 412],
      [[Number(id)], 204],
      [[Number(id)], 204],
      [[Number(id)], 409],
      [[Number(id)], 409],
    ])
    expect(await eventsOf(org.id)).toEqual(['patient.created'])
  })

  it('creates, updates and deletes conditionally on a search matching one record; 412 on several', async () => {
    const { org, provider, patientId, client } = await practice()
    const criteria = `patient=${patientId}&${type.criteria}`
    const conditionally = { headers: { 'if-none-exist': criteria } }
    const created = received(
      await client.create({
        resourceType: 'Observation',
        body: asSent(type.sample(patientId)),
        options: conditionally,
      }),
    )
    const again = received(
      await client.create({
        resourceType: 'Observation',
        body: asSent(type.sample(patientId)),
        options: conditionally,
      }),
    )
    expect([again.id, again.meta?.versionId]).toEqual([created.id, '1'])
    const updated = received(
      await client.update({
        resourceType: 'Observation',
        searchParams: Object.fromEntries(new URLSearchParams(criteria)),
        body: asSent(type.corrected(type.sample(patientId))),
      }),
    )
    expect([updated.id, updated.meta?.versionId]).toEqual([created.id, '2'])
    expect(await storedRecords(org.id)).toEqual([
      { id: Number(created.id), kind: type === lab ? 'LAB_RESULT' : 'VITAL_SIGNS' },
    ])
    const deleted = await fetch(`${baseUrl}/Observation?${criteria}`, {
      method: 'DELETE',
      headers: bearer(provider.token),
    })
    expect(deleted.status).toBe(204)
    expect(received(await client.read({ resourceType: 'Observation', id: created.id })).status).toBe(
      'entered-in-error',
    )
    await client.create({ resourceType: 'Observation', body: asSent(type.sample(patientId)) })
    const several = await refusal(
      client.update({
        resourceType: 'Observation',
        searchParams: Object.fromEntries(new URLSearchParams(criteria)),
        body: asSent(type.sample(patientId)),
      }),
    )
    expect(several.status).toBe(412)
  })

  it('refuses what the kind’s rules refuse and what it cannot store, naming the element, and stores nothing', async () => {
    const { org, patientId, client } = await practice()
    const [broken, expression] = type.ruleBroken(patientId)
    const refused = await refusal(client.create({ resourceType: 'Observation', body: asSent(broken) }))
    expect(refused.status).toBe(422)
    expect(expressionsOf(refused.outcome)).toEqual([expression])
    const unstorable = await refusal(
      client.create({
        resourceType: 'Observation',
        body: asSent({ ...type.sample(patientId), method: { text: 'Manual' }, note: [{ text: 'Fasting' }] }),
      }),
    )
    expect(unstorable.status).toBe(422)
    expect(expressionsOf(unstorable.outcome)).toEqual(['Observation.method', 'Observation.note'])
    expect(fhirErrors(unstorable.outcome)).toEqual([])
    // Only DELETE enters a record in error.
    const withdrawn = await refusal(
      client.create({
        resourceType: 'Observation',
        body: asSent(withStatus(type.sample(patientId), 'entered-in-error')),
      }),
    )
    expect(withdrawn.status).toBe(422)
    expect(expressionsOf(withdrawn.outcome)).toEqual(['Observation.status'])
    expect(await storedRecords(org.id)).toEqual([])
  })

  it('writes only for a patient of the practice: another organization’s is 403, a reference to none 422', async () => {
    const { provider, patientId, client } = await practice()
    const other = await practice()
    const foreign = await refusal(
      client.create({ resourceType: 'Observation', body: asSent(type.sample(other.patientId)) }),
    )
    expect(foreign.status).toBe(403)
    const missing = await refusal(
      client.create({ resourceType: 'Observation', body: asSent(type.sample(2_000_000_000)) }),
    )
    expect(missing.status).toBe(422)
    expect(expressionsOf(missing.outcome)).toEqual(['Observation.subject'])
    const malformed = await refusal(
      client.create({
        resourceType: 'Observation',
        body: asSent({ ...type.sample(patientId), subject: { reference: `Group/${patientId}` } }),
      }),
    )
    expect(malformed.status).toBe(422)
    expect(expressionsOf(malformed.outcome)).toEqual(['Observation.subject'])

    // Another organization's provider can neither write nor delete the record.
    const created = received(
      await client.create({ resourceType: 'Observation', body: asSent(type.sample(patientId)) }),
    )
    const { id } = created
    const foreignUpdate = await refusal(
      other.client.update({ resourceType: 'Observation', id, body: asSent(type.corrected(created)) }),
    )
    expect(foreignUpdate.status).toBe(403)
    expect((await refusal(other.client.delete({ resourceType: 'Observation', id }))).status).toBe(403)
    // Nor can a record move to another patient.
    const anotherPatient = await createPatient(app, provider)
    const moved = await refusal(
      client.update({
        resourceType: 'Observation',
        id,
        body: asSent({ ...type.sample(anotherPatient), id }),
      }),
    )
    expect(moved.status).toBe(422)
    expect(expressionsOf(moved.outcome)).toEqual(['Observation.subject'])
    expect(received(await client.read({ resourceType: 'Observation', id })).meta?.versionId).toBe('1')
  })
})

describe('the kind of an Observation', () => {
  it('is told by its category: none, another or both is a 422 naming Observation.category', async () => {
    const { org, patientId, client } = await practice()
    for (const categories of [
      undefined,
      category('imaging'),
      [{ coding: [{ code: 'laboratory' }] }],
      [...category('laboratory'), ...category('vital-signs')],
    ]) {
      const refused = await refusal(
        client.create({
          resourceType: 'Observation',
          body: asSent({ ...labResult(patientId), category: categories }),
        }),
      )
      expect(refused.status, JSON.stringify(categories)).toBe(422)
      expect(expressionsOf(refused.outcome)).toEqual(['Observation.category'])
    }
    expect(await storedRecords(org.id)).toEqual([])
  })

  it('cannot change by an update: a panel stays a panel, a lab result a lab result', async () => {
    const { patientId, client } = await practice()
    const panel = received(
      await client.create({ resourceType: 'Observation', body: asSent(vitalSigns.sample(patientId)) }),
    )
    const result = received(
      await client.create({ resourceType: 'Observation', body: asSent(lab.sample(patientId)) }),
    )
    for (const [current, replacement] of [
      [panel, lab.sample(patientId)],
      [result, vitalSigns.sample(patientId)],
    ] as const) {
      const refused = await refusal(
        client.update({
          resourceType: 'Observation',
          id: current.id,
          body: asSent({ ...replacement, id: current.id }),
        }),
      )
      expect(refused.status).toBe(422)
      expect(expressionsOf(refused.outcome)).toEqual(['Observation.category'])
    }
  })

  it('picks the roles and the audit rule of its REST routes: a nurse records vital signs, not lab results', async () => {
    const { org, patientId, client } = await practice()
    const nurse = await org.user('NURSE')
    const asNurse = clientFor(nurse.token)
    const panel = received(
      await asNurse.create({ resourceType: 'Observation', body: asSent(vitalSigns.sample(patientId)) }),
    )
    expect(panel.meta?.versionId).toBe('1')
    const corrected = received(
      await asNurse.update({
        resourceType: 'Observation',
        id: panel.id,
        body: asSent(vitalSigns.corrected(panel)),
      }),
    )
    expect(corrected.meta?.versionId).toBe('2')
    const refused = await refusal(
      asNurse.create({ resourceType: 'Observation', body: asSent(lab.sample(patientId)) }),
    )
    expect(refused.status).toBe(403)
    expect(refused.outcome.issue?.[0]?.diagnostics).toMatch(/PROVIDER/)
    const result = received(
      await client.create({ resourceType: 'Observation', body: asSent(lab.sample(patientId)) }),
    )
    expect((await refusal(asNurse.delete({ resourceType: 'Observation', id: result.id }))).status).toBe(403)
    expect(
      (
        await refusal(
          asNurse.update({ resourceType: 'Observation', id: result.id, body: asSent(lab.corrected(result)) }),
        )
      ).status,
    ).toBe(403)
    expect((await storedRecords(org.id)).map((record) => record.kind)).toEqual(['VITAL_SIGNS', 'LAB_RESULT'])
    const audited = async (resourceType: string) =>
      (await auditRows(org.id, resourceType)).map((row) => [row.action, row.status_code])
    expect(await audited('vital-signs')).toEqual([
      ['CREATE', 201],
      ['UPDATE', 200],
    ])
    expect(await audited('lab-result')).toEqual([
      ['CREATE', 403],
      ['CREATE', 201],
      ['UPDATE', 403],
      ['UPDATE', 403],
    ])
    // A billing clerk writes neither.
    const billing = await org.user('BILLING')
    const billed = await refusal(
      clientFor(billing.token).create({
        resourceType: 'Observation',
        body: asSent(vitalSigns.sample(patientId)),
      }),
    )
    expect(billed.status).toBe(403)
  })

  it('is audited per entry in a transaction Bundle, each under its kind’s rule', async () => {
    const { org, patientId, client } = await practice()
    const entry = (resource: Observation) => ({ resource, request: { method: 'POST', url: 'Observation' } })
    const response = (await client.transaction({
      body: {
        resourceType: 'Bundle',
        type: 'transaction',
        entry: [entry(lab.sample(patientId)), entry(vitalSigns.sample(patientId))],
      } as Bundle as never,
    })) as unknown as Bundle
    expect(response.entry?.map((item) => item.response?.status)).toEqual(['201 Created', '201 Created'])
    expect(fhirErrors(response)).toEqual([])
    const ids = response.entry?.map((item) => Number(item.response?.location?.split('/')[1]))
    expect((await auditRows(org.id, 'lab-result')).map((row) => row.resource_ids)).toEqual([[ids?.[0]]])
    expect((await auditRows(org.id, 'vital-signs')).map((row) => row.resource_ids)).toEqual([[ids?.[1]]])
  })

  it('in a transaction Bundle, refuses a lab result by its kind’s roles before its rules, wherever it stands', async () => {
    const { org, patientId } = await practice()
    const asNurse = clientFor((await org.user('NURSE')).token)
    const entry = (resource: Observation) => ({ resource, request: { method: 'POST', url: 'Observation' } })
    const [result, ruleBroken] = [lab.sample(patientId), lab.ruleBroken(patientId)[0]]
    for (const entries of [
      [entry(vitalSigns.sample(patientId)), entry(result)],
      [entry(vitalSigns.sample(patientId)), entry(ruleBroken)],
      [entry(ruleBroken), entry(vitalSigns.sample(patientId))],
    ]) {
      const refused = await refusal(
        asNurse.transaction({
          body: { resourceType: 'Bundle', type: 'transaction', entry: entries } as never,
        }),
      )
      expect(refused.status).toBe(403)
      expect(refused.outcome.issue?.[0]?.diagnostics).toMatch(/PROVIDER/)
    }
    expect(await storedRecords(org.id)).toEqual([])
  })
})

describe('what a vital signs panel holds', () => {
  it('names the member at fault: a value out of range, a BMI not the one computed, °F, an unknown measurement', async () => {
    const { org, patientId, client } = await practice()
    const cases: [Observation, string[]][] = [
      [vitalSignsPanel(patientId, { heartRate: 400 }), ['Observation.contained[0].valueQuantity']],
      [
        vitalSignsPanel(patientId, { heightCm: 180, weightKg: 81, bmi: 30 }),
        ['Observation.contained[2].valueQuantity.value'],
      ],
      [
        {
          ...vitalSignsPanel(patientId, { heartRate: 70 }),
          contained: [
            {
              ...memberOf(vitalSignsPanel(patientId, { temperature: 98.6 }), 'body-temperature'),
              valueQuantity: ucum(98.6, '[degF]'),
            },
          ],
          hasMember: [{ reference: '#body-temperature' }],
        },
        ['Observation.contained[0].valueQuantity.value', 'Observation.contained[0].valueQuantity.code'],
      ],
      [
        {
          ...vitalSignsPanel(patientId, { heartRate: 70 }),
          contained: [
            ...(vitalSignsPanel(patientId, { heartRate: 70 }).contained ?? []),
            {
              ...memberOf(vitalSignsPanel(patientId, { heartRate: 70 }), 'heart-rate'),
              id: 'head',
              code: loinc('9843-4'),
            },
          ],
          hasMember: [{ reference: '#heart-rate' }, { reference: '#head' }],
        },
        ['Observation.contained[1]', 'Observation.hasMember[1]'],
      ],
    ]
    for (const [panel, expressions] of cases) {
      const refused = await refusal(client.create({ resourceType: 'Observation', body: asSent(panel) }))
      expect(refused.status, JSON.stringify(panel.contained)).toBe(422)
      expect(expressionsOf(refused.outcome)).toEqual(expressions)
    }
    expect(await storedRecords(org.id)).toEqual([])
  })

  it('computes BMI from height and weight: one sent as computed is stored, one left out is added', async () => {
    const { provider, patientId, client } = await practice()
    for (const bmi of [25, undefined]) {
      const created = received(
        await client.create({
          resourceType: 'Observation',
          body: asSent(vitalSignsPanel(patientId, { heightCm: 180, weightKg: 81, bmi })),
        }),
      )
      expect(memberOf(await writtenForm(client, created), 'bmi').valueQuantity?.value).toBe(25)
      expect(await restRecord(provider, patientId, 'vitals', created.id)).toMatchObject({ bmi: 25 })
    }
  })
})

describe('what a resource cannot show', () => {
  it('is kept by an update: a record written through REST, written back as read, changes nothing', async () => {
    const { provider, patientId, client } = await practice()
    const recorded = async (path: string, body: object) => {
      const response = await app.inject({
        method: 'POST',
        url: `/api/patients/${patientId}/${path}`,
        headers: bearer(provider.token),
        payload: body,
      })
      expect(response.statusCode, response.body).toBe(201)
      return response.json().data as { id: number }
    }
    const resultedAt = '2024-05-02T07:30:00.000Z'
    const records = [
      // A text result's unit, with no range to show it.
      await recorded('lab-results', {
        testCode: '5778-6',
        testName: 'Urine color',
        value: 'amber',
        unit: 'color',
      }),
      // A range of neither bounds nor text.
      await recorded('lab-results', {
        testCode: '718-7',
        testName: 'Hemoglobin',
        value: 13.5,
        referenceRange: {},
      }),
      // A specimen collected when the result was.
      await recorded('lab-results', {
        testCode: '2345-7',
        testName: 'Glucose',
        value: 90,
        specimenCollectedAt: resultedAt,
        resultedAt,
      }),
      // A temperature taken in °F, stored in °C.
      await recorded('vitals', { temperature: { value: 99.5, unit: 'F' }, heartRate: 80 }),
    ]
    for (const record of records) {
      const id = String(record.id)
      const read = received(await client.read({ resourceType: 'Observation', id }))
      const again = received(await client.update({ resourceType: 'Observation', id, body: asSent(read) }))
      expect(again.meta?.versionId, JSON.stringify(record)).toBe('1')
    }
    const rest = await Promise.all(
      records.map((record, index) =>
        restRecord(provider, patientId, index < 3 ? 'lab-results' : 'vitals', record.id),
      ),
    )
    expect(rest.map(({ version }) => version)).toEqual([1, 1, 1, 1])
    expect(rest.slice(0, 3)).toEqual(records.slice(0, 3))
  })
})

describe('the CapabilityStatement', () => {
  it('lists Observation’s writes, conditional ones included', async () => {
    const statement = (await new Client({ baseUrl }).capabilityStatement()) as unknown as CapabilityStatement
    const observation = statement.rest?.[0]?.resource?.find((resource) => resource.type === 'Observation')
    expect(observation?.interaction?.map((interaction) => interaction.code)).toEqual(
      expect.arrayContaining(['read', 'search-type', 'create', 'update', 'patch', 'delete']),
    )
    expect([
      observation?.conditionalCreate,
      observation?.conditionalUpdate,
      observation?.conditionalDelete,
    ]).toEqual([true, true, 'single'])
  })
})

describe('FHIR writes of generated Observations', () => {
  const past = (min: string, max: string) =>
    fc
      .date({ min: new Date(min), max: new Date(max), noInvalidDate: true })
      .map((date) => new Date(Math.floor(date.getTime() / 1000) * 1000).toISOString())
  const tenths = (min: number, max: number) => fc.integer({ min: min * 10, max: max * 10 }).map((n) => n / 10)

  const vitals = fc
    .record(
      {
        pressure: fc.integer({ min: 90, max: 220 }).chain((systolic) =>
          fc.record({
            systolic: fc.option(fc.constant(systolic), { nil: undefined }),
            diastolic: fc.option(fc.integer({ min: 40, max: 89 }), { nil: undefined }),
          }),
        ),
        heartRate: fc.option(fc.integer({ min: 20, max: 300 }), { nil: undefined }),
        respiratoryRate: fc.option(fc.integer({ min: 4, max: 80 }), { nil: undefined }),
        temperature: fc.option(tenths(34, 42), { nil: undefined }),
        spo2: fc.option(fc.integer({ min: 50, max: 100 }), { nil: undefined }),
        heightCm: fc.option(tenths(40, 220), { nil: undefined }),
        weightKg: fc.option(tenths(2, 300), { nil: undefined }),
        painScore: fc.option(fc.integer({ min: 0, max: 10 }), { nil: undefined }),
        withBmi: fc.boolean(),
        effective: past('2000-01-01T00:00:00Z', '2025-12-31T00:00:00Z'),
      },
      { requiredKeys: ['pressure', 'withBmi', 'effective'] },
    )
    .map(({ pressure, withBmi, effective, ...measured }) => {
      const { heightCm, weightKg } = measured
      const bmi =
        withBmi && heightCm && weightKg ? Math.round((weightKg / (heightCm / 100) ** 2) * 10) / 10 : undefined
      return { vitals: { ...pressure, ...measured, bmi } as Vitals, effective }
    })
    .filter(({ vitals }) => Object.values(vitals).some((value) => value !== undefined))

  const labs = fc.record({
    code: fc.constantFrom(
      ['2345-7', 'Glucose'],
      ['718-7', 'Hemoglobin'],
      ['2160-0', 'Creatinine'],
      ['6690-2', 'Leukocytes'],
    ),
    value: fc.oneof(tenths(0, 500), fc.constantFrom('positive', 'negative', 'trace')),
    unit: fc.option(fc.constantFrom('mg/dL', 'g/dL', '10*3/uL', 'cells per field'), { nil: undefined }),
    range: fc.option(
      fc.record({
        low: tenths(0, 100),
        width: tenths(1, 100),
        text: fc.option(fc.constantFrom('Adult', 'Fasting'), { nil: undefined }),
      }),
      { nil: undefined },
    ),
    interpretation: fc.option(fc.constantFrom(['N', 'Normal'], ['L', 'Low'], ['H', 'High']), {
      nil: undefined,
    }),
    status: fc.constantFrom('preliminary', 'final', 'corrected'),
    collected: fc.option(past('2010-01-01T00:00:00Z', '2020-12-31T00:00:00Z'), { nil: undefined }),
    resulted: fc.option(past('2021-01-01T00:00:00Z', '2025-12-31T00:00:00Z'), { nil: undefined }),
  })

  type LabParts = typeof labs extends fc.Arbitrary<infer T> ? T : never

  /** A lab result from generated parts, its quantities in UCUM where the unit is written in it. */
  function labOf(patientId: number, parts: LabParts): Observation {
    const quantity = (value: number): Quantity =>
      parts.unit === undefined
        ? { value }
        : parts.unit.includes(' ')
          ? { value, unit: parts.unit }
          : { value, unit: parts.unit, system: UCUM, code: parts.unit }
    const range = parts.range && {
      low: quantity(parts.range.low),
      high: quantity(Math.round((parts.range.low + parts.range.width) * 10) / 10),
      ...(parts.range.text ? { text: parts.range.text } : {}),
    }
    return {
      resourceType: 'Observation',
      status: parts.status as Observation['status'],
      category: category('laboratory'),
      code: { ...loinc(parts.code[0]), text: parts.code[1] },
      subject: { reference: `Patient/${patientId}` },
      ...(parts.collected ? { effectiveDateTime: parts.collected } : {}),
      ...(parts.resulted ? { issued: parts.resulted } : {}),
      ...(typeof parts.value === 'number'
        ? { valueQuantity: quantity(parts.value) }
        : { valueString: parts.value }),
      ...(parts.interpretation
        ? {
            interpretation: [
              {
                coding: [
                  { system: INTERPRETATION, code: parts.interpretation[0], display: parts.interpretation[1] },
                ],
              },
            ],
          }
        : {}),
      ...(range ? { referenceRange: [range] } : {}),
    }
  }

  it('stores every element of each valid panel and lab result it is sent, reads back valid resources, and takes them back unchanged', async () => {
    const { patientId, client } = await practice()
    const observation = fc.oneof(
      vitals.map(({ vitals: measured, effective }) => vitalSignsPanel(patientId, measured, { effective })),
      labs.map((parts) => labOf(patientId, parts)),
    )
    await fc.assert(
      fc.asyncProperty(observation, async (sent) => {
        if (sent.contained === undefined) {
          await expectStoredAsSent(client, sent)
          return
        }
        // A panel: what was sent is in its measurements' Observations, and it is written back as read.
        const created = received(await client.create({ resourceType: 'Observation', body: asSent(sent) }))
        const read = received(await client.read({ resourceType: 'Observation', id: created.id }))
        expect(fhirErrors(read)).toEqual([])
        expect(read).toEqual(created)
        expect(droppedElements(sent, await writtenForm(client, read))).toEqual([])
        const again = received(
          await client.update({ resourceType: 'Observation', id: read.id, body: asSent(read) }),
        )
        expect(again).toEqual(read)
      }),
      { numRuns: 25 },
    )
  })
})
