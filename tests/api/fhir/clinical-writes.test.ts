import type {
  AllergyIntolerance,
  Condition,
  Dosage,
  MedicationRequest,
  MedicationStatement,
  OperationOutcome,
} from '@medplum/fhirtypes'
import fc from 'fast-check'
import { Client } from 'fhir-kit-client'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import {
  bearer,
  createPatient,
  newOrganization,
  providerBody,
  type TestUser,
  tokenFor,
} from '../../helpers/factories.js'
import { asSent, headersOf, listeningFhirApp, refusal } from '../../helpers/fhir-client.js'
import { days, expectStoredAsSent, freeText, optional } from '../../helpers/fhir-properties.js'
import { fhirErrors } from '../../helpers/fhir-validator.js'

// FHIR create, update, patch and delete of Condition, AllergyIntolerance, MedicationStatement and
// MedicationRequest
// (the clinical records), driven by fhir-kit-client.

let app: App
let baseUrl: string

beforeAll(async () => {
  ;({ app, baseUrl } = await listeningFhirApp())
})
afterAll(async () => {
  await app.close()
})

const clientFor = (token: string) => new Client({ baseUrl, bearerToken: token })
/** A resource fhir-kit-client answered with, as the type written. */
const received = <R extends ClinicalResource = ClinicalResource>(result: unknown) => result as R
const expressionsOf = (outcome: OperationOutcome) => outcome.issue?.flatMap((issue) => issue.expression ?? [])

const ICD10_CM = 'http://hl7.org/fhir/sid/icd-10-cm'
const RXNORM = 'http://www.nlm.nih.gov/research/umls/rxnorm'
const SNOMED = 'http://snomed.info/sct'
const coding = (system: string, code: string) => ({ coding: [{ system, code }] })
const conditionClinical = (code: string) =>
  coding('http://terminology.hl7.org/CodeSystem/condition-clinical', code)
const allergyClinical = (code: string) =>
  coding('http://terminology.hl7.org/CodeSystem/allergyintolerance-clinical', code)

type ClinicalResource = Condition | AllergyIntolerance | MedicationStatement | MedicationRequest

/** One clinical type: a resource as an integrator sends it, and what the REST API shows of it. */
interface ClinicalCase<R extends ClinicalResource> {
  type: R['resourceType']
  path: 'conditions' | 'allergies' | 'medications'
  /** The resource type of its REST routes' audit records. */
  audited: string
  /** The elements of the patient and encounter references. */
  patientElement: 'subject' | 'patient'
  encounterElement: 'encounter' | 'context'
  /** The element of the time the record was stored. */
  recordedElement: 'recordedDate' | 'dateAsserted' | 'authoredOn'
  sample(patientId: number): R
  rest: Record<string, unknown>
  changed(resource: R): R
  restChanged: Record<string, unknown>
  patch: { op: 'replace' | 'add'; path: string; value: unknown }[]
  restPatched: Record<string, unknown>
  /** An element this server cannot store, and its expression. */
  unstorable: [Partial<R>, string]
  /** Elements breaking a rule of the record's kind, and the expression of the one at fault. */
  ruleBroken: [Partial<R>, string]
  /** What says a record is entered in error, and the expression of its status element. */
  withdrawnMark: [Partial<R>, string]
  /** Whether a read shows the record entered in error. */
  enteredInError(resource: R): boolean
}

const condition: ClinicalCase<Condition> = {
  type: 'Condition',
  path: 'conditions',
  audited: 'condition',
  patientElement: 'subject',
  encounterElement: 'encounter',
  recordedElement: 'recordedDate',
  sample: (patientId) => ({
    resourceType: 'Condition',
    clinicalStatus: conditionClinical('active'),
    verificationStatus: coding('http://terminology.hl7.org/CodeSystem/condition-ver-status', 'confirmed'),
    category: [coding('http://terminology.hl7.org/CodeSystem/condition-category', 'problem-list-item')],
    code: { ...coding(ICD10_CM, 'E11.9'), text: 'Type 2 diabetes mellitus' },
    subject: { reference: `Patient/${patientId}` },
    onsetDateTime: '2019-04-01',
    note: [{ text: 'Diet-controlled at first' }],
  }),
  rest: {
    icd10Code: 'E11.9',
    description: 'Type 2 diabetes mellitus',
    clinicalStatus: 'ACTIVE',
    verificationStatus: 'CONFIRMED',
    onsetDate: '2019-04-01',
    note: 'Diet-controlled at first',
  },
  changed: (resource) => ({
    ...resource,
    clinicalStatus: conditionClinical('resolved'),
    abatementDateTime: '2024-01-15',
  }),
  restChanged: { clinicalStatus: 'RESOLVED', abatementDate: '2024-01-15' },
  patch: [{ op: 'replace', path: '/code/text', value: 'Type 2 diabetes mellitus without complications' }],
  restPatched: { description: 'Type 2 diabetes mellitus without complications' },
  unstorable: [{ bodySite: [{ text: 'Pancreas' }] }, 'Condition.bodySite'],
  ruleBroken: [{ onsetDateTime: '2199-01-01' }, 'Condition.onsetDateTime'],
  withdrawnMark: [
    {
      verificationStatus: coding(
        'http://terminology.hl7.org/CodeSystem/condition-ver-status',
        'entered-in-error',
      ),
      clinicalStatus: undefined,
    },
    'Condition.verificationStatus',
  ],
  enteredInError: (resource) =>
    resource.verificationStatus?.coding?.[0]?.code === 'entered-in-error' &&
    resource.clinicalStatus === undefined,
}

const allergy: ClinicalCase<AllergyIntolerance> = {
  type: 'AllergyIntolerance',
  path: 'allergies',
  audited: 'allergy',
  patientElement: 'patient',
  encounterElement: 'encounter',
  recordedElement: 'recordedDate',
  sample: (patientId) => ({
    resourceType: 'AllergyIntolerance',
    clinicalStatus: allergyClinical('active'),
    category: ['medication'],
    criticality: 'high',
    code: { ...coding(RXNORM, '7980'), text: 'Penicillin G' },
    patient: { reference: `Patient/${patientId}` },
    reaction: [{ manifestation: [{ text: 'Hives' }], severity: 'moderate' }],
  }),
  rest: {
    substance: 'Penicillin G',
    substanceCode: { system: 'RXNORM', code: '7980' },
    category: 'MEDICATION',
    criticality: 'HIGH',
    status: 'ACTIVE',
    reactions: [{ manifestation: 'Hives', severity: 'MODERATE' }],
  },
  changed: (resource) => ({ ...resource, clinicalStatus: allergyClinical('inactive') }),
  restChanged: { status: 'INACTIVE' },
  patch: [{ op: 'add', path: '/reaction/-', value: { manifestation: [{ text: 'Wheezing' }] } }],
  restPatched: {
    reactions: [
      { manifestation: 'Hives', severity: 'MODERATE' },
      { manifestation: 'Wheezing', severity: null },
    ],
  },
  unstorable: [{ type: 'allergy' }, 'AllergyIntolerance.type'],
  ruleBroken: [{ onsetDateTime: '2199-01-01' }, 'AllergyIntolerance.onsetDateTime'],
  withdrawnMark: [
    {
      verificationStatus: coding(
        'http://terminology.hl7.org/CodeSystem/allergyintolerance-verification',
        'entered-in-error',
      ),
      clinicalStatus: undefined,
    },
    'AllergyIntolerance.verificationStatus',
  ],
  enteredInError: (resource) =>
    resource.verificationStatus?.coding?.[0]?.code === 'entered-in-error' &&
    resource.clinicalStatus === undefined,
}

const medication: ClinicalCase<MedicationStatement> = {
  type: 'MedicationStatement',
  path: 'medications',
  audited: 'medication',
  patientElement: 'subject',
  encounterElement: 'context',
  recordedElement: 'dateAsserted',
  sample: (patientId) => ({
    resourceType: 'MedicationStatement',
    status: 'active',
    medicationCodeableConcept: { ...coding(RXNORM, '861007'), text: 'Metformin 500 mg tablet' },
    subject: { reference: `Patient/${patientId}` },
    effectivePeriod: { start: '2024-01-10' },
    dosage: [
      {
        text: '500 mg oral twice daily',
        timing: { code: { text: 'twice daily' } },
        route: coding(SNOMED, '26643006'),
        doseAndRate: [{ doseQuantity: { value: 500, unit: 'mg' } }],
      },
    ],
  }),
  rest: {
    name: 'Metformin 500 mg tablet',
    rxnormCode: '861007',
    dose: 500,
    doseUnit: 'mg',
    route: 'ORAL',
    frequency: 'twice daily',
    startDate: '2024-01-10',
    status: 'ACTIVE',
  },
  changed: (resource) => ({
    ...resource,
    status: 'stopped',
    effectivePeriod: { start: '2024-01-10', end: '2024-06-01' },
  }),
  restChanged: { status: 'STOPPED', endDate: '2024-06-01' },
  patch: [{ op: 'replace', path: '/status', value: 'on-hold' }],
  restPatched: { status: 'ON_HOLD' },
  unstorable: [{ reasonCode: [{ text: 'Diabetes' }] }, 'MedicationStatement.reasonCode'],
  ruleBroken: [
    { effectivePeriod: { start: '2024-01-10', end: '2023-12-31' } },
    'MedicationStatement.effectivePeriod.end',
  ],
  withdrawnMark: [{ status: 'entered-in-error' }, 'MedicationStatement.status'],
  enteredInError: (resource) => resource.status === 'entered-in-error',
}

/** The same records as US Core MedicationRequest: plans, the dates taken bounding the dosage's timing. */
const medicationRequest: ClinicalCase<MedicationRequest> = {
  type: 'MedicationRequest',
  path: 'medications',
  audited: 'medication',
  patientElement: 'subject',
  encounterElement: 'encounter',
  recordedElement: 'authoredOn',
  sample: (patientId) => ({
    resourceType: 'MedicationRequest',
    status: 'active',
    intent: 'plan',
    reportedBoolean: true,
    medicationCodeableConcept: { ...coding(RXNORM, '861007'), text: 'Metformin 500 mg tablet' },
    subject: { reference: `Patient/${patientId}` },
    dosageInstruction: [
      {
        text: '500 mg oral twice daily',
        timing: { code: { text: 'twice daily' }, repeat: { boundsPeriod: { start: '2024-01-10' } } },
        route: coding(SNOMED, '26643006'),
        doseAndRate: [{ doseQuantity: { value: 500, unit: 'mg' } }],
      },
    ],
  }),
  rest: medication.rest,
  changed: (resource) => ({
    ...resource,
    status: 'stopped',
    dosageInstruction: (resource.dosageInstruction ?? []).map((dosage) => ({
      ...dosage,
      timing: { ...dosage.timing, repeat: { boundsPeriod: { start: '2024-01-10', end: '2024-06-01' } } },
    })),
  }),
  restChanged: medication.restChanged,
  patch: medication.patch,
  restPatched: medication.restPatched,
  unstorable: [{ reasonCode: [{ text: 'Diabetes' }] }, 'MedicationRequest.reasonCode'],
  ruleBroken: [
    {
      dosageInstruction: [
        { timing: { repeat: { boundsPeriod: { start: '2024-01-10', end: '2023-12-31' } } } },
      ],
    },
    'MedicationRequest.dosageInstruction.timing.repeat.boundsPeriod.end',
  ],
  withdrawnMark: [{ status: 'entered-in-error' }, 'MedicationRequest.status'],
  enteredInError: (resource) => resource.status === 'entered-in-error',
}

const CASES: ClinicalCase<ClinicalResource>[] = [condition, allergy, medication, medicationRequest]

/** A practice with a provider (who writes clinical records) and one of its patients. */
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
    .select(['action', 'resource_type', 'resource_ids', 'status_code', 'outcome'])
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

const keptVersions = async (id: number) =>
  (
    await app.db
      .selectFrom('record_history')
      .select('version')
      .where('table_name', '=', 'clinical_records')
      .where('record_id', '=', id)
      .execute()
  ).length

describe.each(CASES)('FHIR writes of $type', (type) => {
  it('creates the record as the REST route would: read back valid, the same in REST, the same audit record, no event', async () => {
    const { org, provider, patientId, client } = await practice()
    const sent = type.sample(patientId)
    const created = received(await client.create({ resourceType: type.type, body: asSent(sent) }))
    expect(fhirErrors(created)).toEqual([])
    const id = created.id as string
    expect(created.meta?.versionId).toBe('1')
    expect(headersOf(created).get('location')).toBe(`${baseUrl}/${type.type}/${id}/_history/1`)
    expect(headersOf(created).get('etag')).toBe('W/"1"')
    const read = received(await client.read({ resourceType: type.type, id }))
    expect(fhirErrors(read)).toEqual([])
    expect(read).toMatchObject(sent)
    expect(await restRecord(provider, patientId, type.path, id)).toMatchObject({
      ...type.rest,
      patientId,
      enteredInError: null,
      version: 1,
    })

    // The same record through REST: the audit records are alike, and neither route emits an event.
    const viaRest = await app.inject({
      method: 'POST',
      url: `/api/patients/${patientId}/${type.path}`,
      headers: bearer(provider.token),
      payload: {
        ...type.rest,
        ...(type.path === 'allergies' ? { substance: 'Latex', substanceCode: null } : {}),
      },
    })
    expect(viaRest.statusCode, viaRest.body).toBe(201)
    const [fhir, rest] = await auditRows(org.id, type.audited)
    expect(rest).toMatchObject({ action: 'CREATE', status_code: 201 })
    expect(fhir).toEqual({ ...rest, resource_ids: [Number(id)] })
    // The patient's registration only: the clinical routes emit no event.
    expect(await eventsOf(org.id)).toEqual(['patient.created'])
  })

  it('updates with If-Match, refuses a stale one (412), and a resource written back unchanged changes nothing', async () => {
    const { org, provider, patientId, client } = await practice()
    const created = received(
      await client.create({
        resourceType: type.type,
        body: asSent(type.sample(patientId)),
      }),
    )
    const id = created.id as string
    const updated = received(
      await client.update({
        resourceType: type.type,
        id,
        body: asSent(type.changed(created)),
        options: { headers: { 'if-match': 'W/"1"' } },
      }),
    )
    expect(updated.meta?.versionId).toBe('2')
    expect(headersOf(updated).get('etag')).toBe('W/"2"')
    expect(fhirErrors(updated)).toEqual([])
    expect(await restRecord(provider, patientId, type.path, id)).toMatchObject({
      ...type.restChanged,
      version: 2,
    })

    const stale = await refusal(
      client.update({
        resourceType: type.type,
        id,
        body: asSent(type.changed(created)),
        options: { headers: { 'if-match': 'W/"1"' } },
      }),
    )
    expect(stale.status).toBe(412)

    const read = received(await client.read({ resourceType: type.type, id }))
    const unchanged = received(await client.update({ resourceType: type.type, id, body: asSent(read) }))
    expect(unchanged.meta).toEqual(read.meta)
    expect(await keptVersions(Number(id))).toBe(1)
    const updates = (await auditRows(org.id, type.audited)).filter((row) => row.action === 'UPDATE')
    expect(updates.map((row) => row.status_code)).toEqual([200, 412, 200])

    const restamped = await refusal(
      client.update({
        resourceType: type.type,
        id,
        body: asSent({ ...read, [type.recordedElement]: '2020-01-01T00:00:00.000Z' }),
      }),
    )
    expect(restamped.status).toBe(422)
    expect(expressionsOf(restamped.outcome)).toEqual([`${type.type}.${type.recordedElement}`])
    const withdrawnByUpdate = await refusal(
      client.update({
        resourceType: type.type,
        id,
        body: asSent({ ...type.sample(patientId), id, ...type.withdrawnMark[0] }),
      }),
    )
    expect(withdrawnByUpdate.status).toBe(422)
    expect(expressionsOf(withdrawnByUpdate.outcome)).toEqual([type.withdrawnMark[1]])
  })

  it('patches with JSON Patch, as a correction', async () => {
    const { provider, patientId, client } = await practice()
    const created = received(
      await client.create({
        resourceType: type.type,
        body: asSent(type.sample(patientId)),
      }),
    )
    const id = created.id as string
    const patched = received(await client.patch({ resourceType: type.type, id, jsonPatch: type.patch }))
    expect(patched.meta?.versionId).toBe('2')
    expect(fhirErrors(patched)).toEqual([])
    expect(await restRecord(provider, patientId, type.path, id)).toMatchObject(type.restPatched)
    const unstorable = await refusal(
      client.patch({
        resourceType: type.type,
        id,
        jsonPatch: Object.entries(type.unstorable[0]).map(([name, value]) => ({
          op: 'add' as const,
          path: `/${name}`,
          value,
        })),
      }),
    )
    expect(unstorable.status).toBe(422)
    expect(expressionsOf(unstorable.outcome)).toEqual([type.unstorable[1]])
  })

  it('deletes by entering the record in error: it stays, withdrawn, in FHIR and REST; again changes nothing', async () => {
    const { org, provider, patientId, client } = await practice()
    const created = received(
      await client.create({
        resourceType: type.type,
        body: asSent(type.sample(patientId)),
      }),
    )
    const id = created.id as string
    const stale = await refusal(
      client.delete({ resourceType: type.type, id, options: { headers: { 'if-match': 'W/"2"' } } }),
    )
    expect(stale.status).toBe(412)
    await client.delete({ resourceType: type.type, id, options: { headers: { 'if-match': 'W/"1"' } } })
    const read = received(await client.read({ resourceType: type.type, id }))
    expect(fhirErrors(read)).toEqual([])
    expect(type.enteredInError(read)).toBe(true)
    expect(read.meta?.versionId).toBe('2')
    const rest = await restRecord(provider, patientId, type.path, id)
    expect(rest.enteredInError).toMatchObject({ by: provider.id, reason: 'Deleted through the FHIR API' })
    expect(rest.version).toBe(2)

    await client.delete({ resourceType: type.type, id })
    expect(received(await client.read({ resourceType: type.type, id })).meta?.versionId).toBe('2')
    // A withdrawn record cannot be corrected, as in REST; written back as read, neither.
    const corrected = await refusal(
      client.update({ resourceType: type.type, id, body: asSent({ ...created, id }) }),
    )
    expect(corrected.status).toBe(409)
    expect((await refusal(client.update({ resourceType: type.type, id, body: asSent(read) }))).status).toBe(
      409,
    )

    // Recorded as the REST entered-in-error route records a withdrawal.
    const viaRest = received(
      await client.create({
        resourceType: type.type,
        body: asSent(type.changed(type.sample(patientId))),
      }),
    )
    const withdrawn = await app.inject({
      method: 'POST',
      url: `/api/patients/${patientId}/${type.path}/${viaRest.id}/entered-in-error`,
      headers: bearer(provider.token),
      payload: { reason: 'Recorded for the wrong patient' },
    })
    expect(withdrawn.statusCode, withdrawn.body).toBe(200)
    const withdrawals = (await auditRows(org.id, type.audited)).filter((row) => row.action === 'UPDATE')
    const asRecorded = ({ action, resource_type, outcome }: (typeof withdrawals)[number]) => ({
      action,
      resource_type,
      outcome,
    })
    expect(withdrawals.map((row) => [row.resource_ids, row.status_code])).toEqual([
      [[Number(id)], 412],
      [[Number(id)], 204],
      [[Number(id)], 204],
      [[Number(id)], 409],
      [[Number(id)], 409],
      [[Number(viaRest.id)], 200],
    ])
    expect(asRecorded(withdrawals[1] as (typeof withdrawals)[number])).toEqual(
      asRecorded(withdrawals[5] as (typeof withdrawals)[number]),
    )
    // The patient's registration only: the clinical routes emit no event.
    expect(await eventsOf(org.id)).toEqual(['patient.created'])
  })

  it('refuses an element it cannot store (422, naming it), and stores nothing', async () => {
    const { org, patientId, client } = await practice()
    const sent = { ...type.sample(patientId), ...type.unstorable[0] }
    const { status, outcome } = await refusal(client.create({ resourceType: type.type, body: asSent(sent) }))
    expect(status).toBe(422)
    expect(expressionsOf(outcome)).toEqual([type.unstorable[1]])
    expect(fhirErrors(outcome)).toEqual([])
    // Only DELETE enters a record in error: neither a create nor an update says so.
    const [mark, statusElement] = type.withdrawnMark
    const newWithdrawn = await refusal(
      client.create({ resourceType: type.type, body: asSent({ ...type.sample(patientId), ...mark }) }),
    )
    expect(newWithdrawn.status).toBe(422)
    expect(expressionsOf(newWithdrawn.outcome)).toEqual([statusElement])

    // The time a record is stored is the server's.
    const recordedAt = { ...type.sample(patientId), [type.recordedElement]: '2024-01-01T00:00:00.000Z' }
    const recorded = await refusal(client.create({ resourceType: type.type, body: asSent(recordedAt) }))
    expect(recorded.status).toBe(422)
    expect(expressionsOf(recorded.outcome)).toEqual([`${type.type}.${type.recordedElement}`])
    const stored = await app.db
      .selectFrom('clinical_records')
      .select('id')
      .where('organization_id', '=', org.id)
      .execute()
    expect(stored).toEqual([])
  })

  it('refuses what the record kind’s rules refuse, and an encounter not of the patient, naming the element', async () => {
    const { patientId, client } = await practice()
    const broken = await refusal(
      client.create({
        resourceType: type.type,
        body: asSent({ ...type.sample(patientId), ...type.ruleBroken[0] }),
      }),
    )
    expect(broken.status).toBe(422)
    expect(expressionsOf(broken.outcome)).toEqual([type.ruleBroken[1]])
    const encounter = `${type.type}.${type.encounterElement}`
    for (const [reference, message] of [
      ['Encounter/2000000000', 'is not an encounter of this patient'],
      ['Appointment/1', 'must reference a record of this server, as Encounter/<id>'],
    ]) {
      const refused = await refusal(
        client.create({
          resourceType: type.type,
          body: asSent({ ...type.sample(patientId), [type.encounterElement]: { reference } }),
        }),
      )
      expect(refused.status, reference).toBe(422)
      expect(refused.outcome.issue?.map((issue) => [issue.expression, issue.diagnostics])).toEqual([
        [[encounter], `${encounter} ${message}`],
      ])
    }
  })

  it('creates, updates and deletes conditionally on a search matching one record; 412 on several', async () => {
    const { org, provider, patientId, client } = await practice()
    const criteria = `patient=${patientId}`
    const created = received(
      await client.create({
        resourceType: type.type,
        body: asSent(type.sample(patientId)),
        options: { headers: { 'if-none-exist': criteria } },
      }),
    )
    const again = received(
      await client.create({
        resourceType: type.type,
        body: asSent(type.sample(patientId)),
        options: { headers: { 'if-none-exist': criteria } },
      }),
    )
    expect([again.id, again.meta?.versionId]).toEqual([created.id, '1'])
    const updated = received(
      await client.update({
        resourceType: type.type,
        searchParams: { patient: patientId },
        body: asSent(type.changed(type.sample(patientId))),
      }),
    )
    expect([updated.id, updated.meta?.versionId]).toEqual([created.id, '2'])
    const stored = await app.db
      .selectFrom('clinical_records')
      .select('id')
      .where('organization_id', '=', org.id)
      .execute()
    expect(stored).toEqual([{ id: Number(created.id) }])
    const deleted = await fetch(`${baseUrl}/${type.type}?patient=${patientId}`, {
      method: 'DELETE',
      headers: bearer(provider.token),
    })
    expect(deleted.status).toBe(204)
    expect(
      type.enteredInError(received(await client.read({ resourceType: type.type, id: created.id as string }))),
    ).toBe(true)
    await client.create({ resourceType: type.type, body: asSent(type.changed(type.sample(patientId))) })
    const several = await refusal(
      client.update({
        resourceType: type.type,
        searchParams: { patient: patientId },
        body: asSent(type.sample(patientId)),
      }),
    )
    expect(several.status).toBe(412)
  })

  it('writes only for a patient of the practice: another organization’s is 403, a reference to none 422', async () => {
    const { provider, patientId, client } = await practice()
    const other = await practice()
    const expression = `${type.type}.${type.patientElement}`
    const foreign = await refusal(
      client.create({ resourceType: type.type, body: asSent(type.sample(other.patientId)) }),
    )
    expect(foreign.status).toBe(403)
    const missing = await refusal(
      client.create({ resourceType: type.type, body: asSent(type.sample(2_000_000_000)) }),
    )
    expect(missing.status).toBe(422)
    expect(expressionsOf(missing.outcome)).toEqual([expression])
    for (const reference of [{ reference: `Practitioner/${patientId}` }, { display: 'Jane Doe' }]) {
      const malformed = await refusal(
        client.create({
          resourceType: type.type,
          body: asSent({ ...type.sample(patientId), [type.patientElement]: reference }),
        }),
      )
      expect(malformed.status, JSON.stringify(reference)).toBe(422)
      expect(expressionsOf(malformed.outcome)).toEqual([expression])
    }

    // A record's patient cannot change.
    const created = received(
      await client.create({
        resourceType: type.type,
        body: asSent(type.sample(patientId)),
      }),
    )
    const anotherPatient = await createPatient(app, provider)
    const moved = await refusal(
      client.update({
        resourceType: type.type,
        id: created.id as string,
        body: asSent({ ...created, [type.patientElement]: { reference: `Patient/${anotherPatient}` } }),
      }),
    )
    expect(moved.status).toBe(422)
    expect(expressionsOf(moved.outcome)).toEqual([expression])

    // Another organization's provider can neither write nor delete the record.
    const id = created.id as string
    const foreignUpdate = await refusal(
      other.client.update({ resourceType: type.type, id, body: asSent(type.changed(created)) }),
    )
    expect(foreignUpdate.status).toBe(403)
    expect((await refusal(other.client.delete({ resourceType: type.type, id }))).status).toBe(403)
    expect(received(await client.read({ resourceType: type.type, id })).meta?.versionId).toBe('1')
  })

  it('limits a patient/ scope to its launch patient', async () => {
    const { provider, patientId } = await practice()
    const otherPatient = await createPatient(app, provider)
    const client = clientFor(
      tokenFor(app, provider, undefined, {
        scopes: [`patient/${type.type}.cud`],
        patient: String(patientId),
      }),
    )
    const own = received(
      await client.create({
        resourceType: type.type,
        body: asSent(type.sample(patientId)),
      }),
    )
    expect(own.id).toBeDefined()
    const theirs = await refusal(
      client.create({ resourceType: type.type, body: asSent(type.sample(otherPatient)) }),
    )
    expect(theirs.status).toBe(403)
  })
})

describe('what a resource cannot show', () => {
  it('is kept by an update: a record written back as read, or changed, keeps it', async () => {
    const { org, provider, patientId, client } = await practice()
    const admin = await org.user('ADMIN')
    const prescriber = await app.inject({
      method: 'POST',
      url: '/api/providers',
      headers: bearer(admin.token),
      payload: providerBody(),
    })
    expect(prescriber.statusCode, prescriber.body).toBe(201)
    const prescriberId = prescriber.json().data.id
    const recorded = async (path: string, body: object) => {
      const response = await app.inject({
        method: 'POST',
        url: `/api/patients/${patientId}/${path}`,
        headers: bearer(provider.token),
        payload: body,
      })
      expect(response.statusCode, response.body).toBe(201)
      return String(response.json().data.id)
    }
    const records = [
      {
        type: 'MedicationStatement',
        path: 'medications',
        id: await recorded('medications', { name: 'Insulin glargine', route: 'OTHER', prescriberId }),
        kept: { route: 'OTHER', prescriberId },
      },
      {
        type: 'AllergyIntolerance',
        path: 'allergies',
        id: await recorded('allergies', { substance: 'Peanut', category: 'FOOD', severity: 'SEVERE' }),
        kept: { severity: 'SEVERE' },
      },
      {
        type: 'Condition',
        path: 'conditions',
        id: await recorded('conditions', {
          icd10Code: 'J45.909',
          description: 'Asthma',
          onsetDate: '2010-05-01',
          abatementDate: '2015-05-01',
        }),
        kept: { abatementDate: '2015-05-01' },
      },
    ] as const
    for (const record of records) {
      const read = received(await client.read({ resourceType: record.type, id: record.id }))
      const unchanged = received(
        await client.update({
          resourceType: record.type,
          id: record.id,
          body: asSent(read),
        }),
      )
      expect(unchanged.meta?.versionId, record.type).toBe('1')
      const rest = await restRecord(provider, patientId, record.path, record.id)
      expect(rest, record.type).toMatchObject({ ...record.kept, version: 1 })
    }
    const medication = received<MedicationStatement>(
      await client.read({
        resourceType: 'MedicationStatement',
        id: records[0].id,
      }),
    )
    const stopped = received<MedicationStatement>(
      await client.update({
        resourceType: 'MedicationStatement',
        id: records[0].id,
        body: asSent({ ...medication, status: 'stopped' }),
      }),
    )
    expect(stopped.status).toBe('stopped')
    expect(await restRecord(provider, patientId, 'medications', records[0].id)).toMatchObject({
      status: 'STOPPED',
      route: 'OTHER',
      prescriberId,
      version: 2,
    })
  })
})

describe('FHIR writes of generated clinical records', () => {
  const past = days('1950-01-01', '2024-12-31')
  /** Two dates, the second not before the first, either left out. */
  const span = (min: string, max: string) =>
    fc
      .tuple(optional(days(min, max)), optional(days(min, max)))
      .map(([from, to]) => (from && to && to < from ? [to, from] : [from, to]))

  const conditions = fc
    .record({
      icd10Code: fc.stringMatching(/^[A-TV-Z][0-9][0-9AB](\.[0-9A-TV-Z]{1,4})?$/),
      description: freeText(300),
      clinical: optional(
        fc.constantFrom('active', 'recurrence', 'relapse', 'inactive', 'remission', 'resolved'),
      ),
      verification: optional(
        fc.constantFrom('unconfirmed', 'provisional', 'differential', 'confirmed', 'refuted'),
      ),
      category: fc.constantFrom('none', 'code', 'display'),
      severity: optional(
        fc.record({
          coded: fc.constantFrom(['255604002', 'Mild'], ['6736007', 'Moderate'], ['24484000', 'Severe']),
          display: fc.boolean(),
          text: fc.boolean(),
        }),
      ),
      dates: span('1950-01-01', '2024-12-31'),
      note: optional(freeText(2000)),
    })
    .map((generated): Omit<Condition, 'subject'> => {
      const [onset, abatement] = generated.dates
      const abated = ['inactive', 'remission', 'resolved'].includes(generated.clinical ?? 'active')
      const severity = generated.severity
      return {
        resourceType: 'Condition',
        ...(generated.clinical ? { clinicalStatus: conditionClinical(generated.clinical) } : {}),
        ...(generated.verification
          ? {
              verificationStatus: coding(
                'http://terminology.hl7.org/CodeSystem/condition-ver-status',
                generated.verification,
              ),
            }
          : {}),
        ...(generated.category === 'none'
          ? {}
          : {
              category: [
                {
                  coding: [
                    {
                      system: 'http://terminology.hl7.org/CodeSystem/condition-category',
                      code: 'problem-list-item',
                      ...(generated.category === 'display' ? { display: 'Problem List Item' } : {}),
                    },
                  ],
                },
              ],
            }),
        ...(severity
          ? {
              severity: {
                coding: [
                  {
                    system: SNOMED,
                    code: severity.coded[0],
                    ...(severity.display ? { display: severity.coded[1] } : {}),
                  },
                ],
                ...(severity.text ? { text: severity.coded[1] } : {}),
              },
            }
          : {}),
        code: { ...coding(ICD10_CM, generated.icd10Code), text: generated.description },
        ...(onset ? { onsetDateTime: onset } : {}),
        // Only an abated condition has an abatement (con-4).
        ...(abatement && abated ? { abatementDateTime: abatement } : {}),
        ...(generated.note ? { note: [{ text: generated.note }] } : {}),
      }
    })

  const substanceCode = fc.oneof(
    fc.record({ system: fc.constant(RXNORM), code: fc.stringMatching(/^[1-9][0-9]{0,6}$/) }),
    fc.record({ system: fc.constant(SNOMED), code: fc.stringMatching(/^[1-9][0-9]{5,17}$/) }),
    fc.record({
      system: fc.constant('http://fdasis.nlm.nih.gov'),
      code: fc.stringMatching(/^[0-9A-Z]{10}$/),
    }),
  )
  const allergySeverity = fc.constantFrom('mild' as const, 'moderate' as const, 'severe' as const)
  const allergies = fc
    .record({
      substance: freeText(200),
      code: optional(substanceCode),
      category: fc.constantFrom(
        'food' as const,
        'medication' as const,
        'environment' as const,
        'biologic' as const,
      ),
      criticality: optional(fc.constantFrom('low' as const, 'high' as const, 'unable-to-assess' as const)),
      // Always sent (ait-1).
      clinical: fc.constantFrom('active', 'inactive', 'resolved'),
      reactions: fc.array(fc.record({ manifestation: freeText(200), severity: optional(allergySeverity) }), {
        maxLength: 3,
      }),
      onset: optional(past),
    })
    .map(
      (generated): Omit<AllergyIntolerance, 'patient'> => ({
        resourceType: 'AllergyIntolerance',
        clinicalStatus: allergyClinical(generated.clinical),
        category: [generated.category],
        ...(generated.criticality ? { criticality: generated.criticality } : {}),
        code: { ...(generated.code ? { coding: [generated.code] } : {}), text: generated.substance },
        ...(generated.onset ? { onsetDateTime: generated.onset } : {}),
        ...(generated.reactions.length > 0
          ? {
              reaction: generated.reactions.map(({ manifestation, severity }) => ({
                manifestation: [{ text: manifestation }],
                ...(severity ? { severity } : {}),
              })),
            }
          : {}),
      }),
    )

  const ROUTES = [
    '26643006',
    '37839007',
    '47625008',
    '78421000',
    '34206005',
    '6064005',
    '447694001',
    '37161004',
  ]
  // A dosage of parts (dose, route, frequency, instructions), or the instructions alone as its text.
  const dosage = fc.oneof(
    freeText(2000).map((text): Dosage => ({ text })),
    fc
      .record({
        dose: optional(
          fc.record({
            value: fc.double({ min: 0.001, max: 100_000, noNaN: true }),
            unit: fc.oneof(fc.constantFrom('mg', 'mL', 'tablet', 'puff', 'units', 'mcg'), freeText(20)),
          }),
        ),
        route: optional(fc.constantFrom(...ROUTES)),
        frequency: optional(freeText(100)),
        instructions: optional(freeText(2000)),
      })
      .filter((parts) => Object.values(parts).some((part) => part !== undefined))
      .map(
        ({ dose, route, frequency, instructions }): Dosage => ({
          ...(instructions ? { additionalInstruction: [{ text: instructions }] } : {}),
          ...(frequency ? { timing: { code: { text: frequency } } } : {}),
          ...(route ? { route: coding(SNOMED, route) } : {}),
          ...(dose ? { doseAndRate: [{ doseQuantity: dose }] } : {}),
        }),
      ),
  )
  const medications = fc
    .record({
      name: freeText(200),
      rxnormCode: optional(fc.stringMatching(/^[1-9][0-9]{0,9}$/)),
      status: fc.constantFrom(
        'active' as const,
        'completed' as const,
        'stopped' as const,
        'on-hold' as const,
      ),
      period: span('1990-01-01', '2030-12-31'),
      dosage: optional(dosage),
    })
    .map((generated): Omit<MedicationStatement, 'subject'> => {
      const [start, end] = generated.period
      return {
        resourceType: 'MedicationStatement',
        status: generated.status,
        medicationCodeableConcept: {
          ...(generated.rxnormCode ? coding(RXNORM, generated.rxnormCode) : {}),
          text: generated.name,
        },
        ...(start || end
          ? { effectivePeriod: { ...(start ? { start } : {}), ...(end ? { end } : {}) } }
          : {}),
        ...(generated.dosage ? { dosage: [generated.dosage] } : {}),
      }
    })

  const medicationRequests = medications.map(
    ({ status, medicationCodeableConcept, effectivePeriod, dosage }): Omit<MedicationRequest, 'subject'> => {
      const [given] = dosage ?? []
      const instruction = effectivePeriod
        ? { ...given, timing: { ...given?.timing, repeat: { boundsPeriod: effectivePeriod } } }
        : given
      return {
        resourceType: 'MedicationRequest',
        status: status as MedicationRequest['status'],
        intent: 'plan',
        medicationCodeableConcept,
        ...(instruction ? { dosageInstruction: [instruction] } : {}),
      }
    },
  )

  const GENERATED: {
    type: string
    /** Resources of the type, but for the patient's reference, at `patientElement`. */
    resources: fc.Arbitrary<
      | Omit<Condition, 'subject'>
      | Omit<AllergyIntolerance, 'patient'>
      | Omit<MedicationStatement, 'subject'>
      | Omit<MedicationRequest, 'subject'>
    >
    patientElement: 'subject' | 'patient'
    /** A patient of its own for each resource: a patient has one active allergy to a substance. */
    patientEach?: true
  }[] = [
    { type: 'Condition', resources: conditions, patientElement: 'subject' },
    { type: 'AllergyIntolerance', resources: allergies, patientElement: 'patient', patientEach: true },
    { type: 'MedicationStatement', resources: medications, patientElement: 'subject' },
    { type: 'MedicationRequest', resources: medicationRequests, patientElement: 'subject' },
  ]

  it.each(GENERATED)(
    'stores every element of each valid $type it is sent, reads back a valid resource, and takes it back unchanged',
    async ({ resources, patientElement, patientEach }) => {
      const { provider, patientId, client } = await practice()
      await fc.assert(
        fc.asyncProperty(resources, async (resource) => {
          const patient = patientEach ? await createPatient(app, provider) : patientId
          const sent = { ...resource, [patientElement]: { reference: `Patient/${patient}` } }
          await expectStoredAsSent(client, sent as ClinicalResource)
        }),
        { numRuns: 20 },
      )
    },
  )
})
