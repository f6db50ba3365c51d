import type { AllergyIntolerance, Bundle, BundleEntry, Observation, Patient } from '@medplum/fhirtypes'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { bearer, createPatient, newOrganization, type TestUser } from '../../helpers/factories.js'
import { listeningFhirApp } from '../../helpers/fhir-client.js'
import { fhirErrors } from '../../helpers/fhir-validator.js'

// A transaction's consecutive creates of one type are written in one statement; what they store
// and answer is what the same creates store and answer one by one.

let app: App
/** The statements sent since the last `sent.length = 0`. */
const sent: string[] = []

beforeAll(async () => {
  ;({ app } = await listeningFhirApp())
  app.database.observe({ query: (_seconds, _error, statement) => sent.push(statement), connectionError() {} })
})
afterAll(async () => {
  await app.close()
})

const UCUM = 'http://unitsofmeasure.org'
const mgPerDl = (value: number) => ({ value, unit: 'mg/dL', system: UCUM, code: 'mg/dL' })

/** The n-th lab result of a series (its value differs), of the patient `subject` names. */
function labResult(n: number, subject: string, overrides: Partial<Observation> = {}): Observation {
  return {
    resourceType: 'Observation',
    status: 'final',
    category: [
      {
        coding: [
          { system: 'http://terminology.hl7.org/CodeSystem/observation-category', code: 'laboratory' },
        ],
      },
    ],
    code: { coding: [{ system: 'http://loinc.org', code: '2345-7' }], text: 'Glucose' },
    subject: { reference: subject },
    effectiveDateTime: '2024-03-01T08:00:00.000Z',
    issued: '2024-03-01T10:30:00.000Z',
    valueQuantity: mgPerDl(60 + (n % 60)),
    referenceRange: [{ low: mgPerDl(70), high: mgPerDl(99) }],
    ...overrides,
  }
}

const penicillinAllergy = (patientId: number): AllergyIntolerance => ({
  resourceType: 'AllergyIntolerance',
  clinicalStatus: {
    coding: [{ system: 'http://terminology.hl7.org/CodeSystem/allergyintolerance-clinical', code: 'active' }],
  },
  category: ['medication'],
  code: {
    coding: [{ system: 'http://www.nlm.nih.gov/research/umls/rxnorm', code: '7980' }],
    text: 'Penicillin G',
  },
  patient: { reference: `Patient/${patientId}` },
})

const post = (resource: Observation | Patient | AllergyIntolerance, fullUrl?: string): BundleEntry => ({
  ...(fullUrl ? { fullUrl } : {}),
  resource,
  request: { method: 'POST', url: resource.resourceType },
})

const FHIR_JSON = { 'content-type': 'application/fhir+json' }

async function transaction(user: TestUser, entry: BundleEntry[], prefer = 'return=representation') {
  const response = await app.inject({
    method: 'POST',
    url: '/fhir/R4',
    headers: { ...bearer(user.token), ...FHIR_JSON, prefer },
    payload: { resourceType: 'Bundle', type: 'transaction', entry },
  })
  return { status: response.statusCode, body: response.json() }
}

async function practice() {
  const org = await newOrganization(app)
  const provider = await org.user('PROVIDER', 'ADMIN')
  return { org, provider, patientId: await createPatient(app, provider) }
}

/** An organization's clinical records as stored, oldest first, with what tells them apart aside. */
const storedRecords = async (organizationId: number) =>
  (
    await app.db
      .selectFrom('clinical_records')
      .selectAll()
      .where('organization_id', '=', organizationId)
      .orderBy('id')
      .execute()
  ).map(
    ({
      id,
      organization_id,
      patient_id,
      recorded_by,
      updated_by,
      recorded_at,
      created_at,
      updated_at,
      ...row
    }) => row,
  )

/** An organization's audit records of changes of clinical records, oldest first, naming which by place. */
async function changeAudits(organizationId: number) {
  const records = await app.db
    .selectFrom('clinical_records')
    .select('id')
    .where('organization_id', '=', organizationId)
    .orderBy('id')
    .execute()
  const rows = await app.db
    .selectFrom('audit_log')
    .select(['action', 'resource_type', 'resource_ids', 'patient_id', 'status_code', 'outcome', 'request_id'])
    .where('organization_id', '=', organizationId)
    .where('action', 'in', ['CREATE', 'UPDATE', 'DELETE'])
    .where('resource_type', '!=', 'patient')
    .orderBy('id')
    .execute()
  const place = (id: number) => records.findIndex((record) => record.id === id)
  return rows.map(({ resource_ids, request_id, ...row }) => ({
    ...row,
    records: resource_ids.map(place),
    requestId: request_id,
  }))
}

async function countsOf(organizationId: number) {
  const count = async (table: 'clinical_records' | 'record_history' | 'outbox_events') =>
    Number(
      (
        await app.db
          .selectFrom(table)
          .select((eb) => eb.fn.countAll<number>().as('count'))
          .where('organization_id', '=', organizationId)
          .executeTakeFirstOrThrow()
      ).count,
    )
  return {
    records: await count('clinical_records'),
    versions: await count('record_history'),
    events: await count('outbox_events'),
    audited: (await changeAudits(organizationId)).length,
  }
}

const clinicalInserts = () => sent.filter((statement) => /insert into clinical_records/i.test(statement))

describe('a transaction of 100 lab results', () => {
  it('stores and answers what 100 creates one by one do, in one insert', async () => {
    const [alone, grouped] = [await practice(), await practice()]
    const series = (patientId: number) =>
      Array.from({ length: 100 }, (_, n) => labResult(n, `Patient/${patientId}`))

    sent.length = 0
    const created: Observation[] = []
    for (const resource of series(alone.patientId)) {
      const response = await app.inject({
        method: 'POST',
        url: '/fhir/R4/Observation',
        headers: { ...bearer(alone.provider.token), ...FHIR_JSON },
        payload: resource,
      })
      expect(response.statusCode, response.body).toBe(201)
      created.push(response.json())
    }
    expect(clinicalInserts()).toHaveLength(100)

    const before = await countsOf(grouped.org.id)
    sent.length = 0
    const { status, body } = await transaction(
      grouped.provider,
      series(grouped.patientId).map((resource) => post(resource)),
    )
    expect(status, JSON.stringify(body)).toBe(200)
    expect(clinicalInserts()).toHaveLength(1)
    expect(fhirErrors(body)).toEqual([])

    // The same rows, versions, events and audit records (each its own call's: one request id for
    // the Bundle, one per create alone).
    expect(await storedRecords(grouped.org.id)).toEqual(await storedRecords(alone.org.id))
    expect(await countsOf(grouped.org.id)).toEqual({ ...before, records: 100, audited: 100 })
    expect(await countsOf(alone.org.id)).toEqual(await countsOf(grouped.org.id))
    const [audits, auditsAlone] = [await changeAudits(grouped.org.id), await changeAudits(alone.org.id)]
    const withoutRequest = (rows: typeof audits, patientId: number) =>
      rows.map(({ requestId, patient_id, ...row }) => ({ ...row, ofPatient: patient_id === patientId }))
    expect(withoutRequest(audits, grouped.patientId)).toEqual(withoutRequest(auditsAlone, alone.patientId))
    expect(audits.map((row) => row.records)).toEqual(audits.map((_, n) => [n]))
    expect(new Set(audits.map((row) => row.requestId)).size).toBe(1)

    // Each answered in order as its read answers it, as a create alone answers.
    const entries = (body as Bundle).entry ?? []
    const ids = entries.map((entry) => Number(entry.resource?.id))
    expect(ids).toEqual([...ids].sort((a, b) => a - b))
    for (const [n, entry] of entries.entries()) {
      const { resource, response } = entry
      expect(response?.status).toBe('201 Created')
      expect(response?.etag).toBe('W/"1"')
      expect(response?.location).toBe(`Observation/${ids[n]}/_history/1`)
      const read = await app.inject({
        url: `/fhir/R4/Observation/${ids[n]}`,
        headers: bearer(grouped.provider.token),
      })
      expect(resource).toEqual(read.json())
      const { id, meta, subject, ...shown } = resource as Observation
      const { id: _id, meta: _meta, subject: _subject, ...shownAlone } = created[n] as Observation
      expect(shown).toEqual(shownAlone)
    }
  })
})

describe('a failure among grouped creates', () => {
  it('stores nothing and names the first entry that fails, whether before its write or at it', async () => {
    const { org, provider, patientId } = await practice()
    const before = await countsOf(org.id)
    const series = () => Array.from({ length: 100 }, (_, n) => labResult(n, `Patient/${patientId}`))
    // Collected in the future: refused by the lab results' rules, before the entry's write.
    const future = (n: number) =>
      labResult(n, `Patient/${patientId}`, { effectiveDateTime: '2199-01-01T00:00:00Z' })
    // Of no patient: refused at the write, which checks the patient.
    const ofNobody = (n: number) => labResult(n, 'Patient/2147483647')
    const cases: [Record<number, Observation>, string][] = [
      [{ 57: future(57) }, 'Bundle.entry[57].resource.effectiveDateTime'],
      [{ 57: ofNobody(57) }, 'Bundle.entry[57].resource.subject'],
      [{ 30: ofNobody(30), 57: future(57) }, 'Bundle.entry[30].resource.subject'],
      [{ 30: future(30), 57: ofNobody(57) }, 'Bundle.entry[30].resource.effectiveDateTime'],
      [{ 99: ofNobody(99) }, 'Bundle.entry[99].resource.subject'],
    ]
    for (const [failing, expression] of cases) {
      const resources = series().map((resource, n) => failing[n] ?? resource)
      const { status, body } = await transaction(
        provider,
        resources.map((resource) => post(resource)),
      )
      expect(status, expression).toBe(422)
      expect(body.issue.map((issue: { expression?: string[] }) => issue.expression?.[0])).toEqual([
        expression,
      ])
    }
    expect(await countsOf(org.id)).toEqual(before)
  })

  it('refuses the whole transaction when one entry names another organization’s patient, as a create alone is', async () => {
    const { org, provider, patientId } = await practice()
    const other = await newOrganization(app)
    const theirs = await createPatient(app, await other.user('ADMIN'))
    const before = await countsOf(org.id)
    const resources = Array.from({ length: 20 }, (_, n) =>
      labResult(n, `Patient/${n === 12 ? theirs : patientId}`),
    )
    const { status, body } = await transaction(
      provider,
      resources.map((resource) => post(resource)),
    )
    expect(status).toBe(403)
    expect(body.issue[0].expression).toEqual(['Bundle.entry[12]'])
    expect(body.issue[0].diagnostics).toMatch(/another organization/)
    expect(await countsOf(org.id)).toEqual(before)
    const alone = await app.inject({
      method: 'POST',
      url: '/fhir/R4/Observation',
      headers: { ...bearer(provider.token), ...FHIR_JSON },
      payload: resources[12],
    })
    expect(alone.statusCode).toBe(403)
    expect((await countsOf(other.id)).records).toBe(0)
  })

  it('refuses a second active allergy to one substance where it stands, in the transaction or before it', async () => {
    const { org, provider, patientId } = await practice()
    const other = await createPatient(app, provider)
    const before = await countsOf(org.id)
    const twice = [
      post(penicillinAllergy(other)),
      post(penicillinAllergy(patientId)),
      post(penicillinAllergy(patientId)),
    ]
    const refused = await transaction(provider, twice)
    expect(refused.status).toBe(409)
    expect(refused.body.issue[0].expression).toEqual(['Bundle.entry[2]'])
    expect(await countsOf(org.id)).toEqual(before)

    expect((await transaction(provider, [post(penicillinAllergy(patientId))])).status).toBe(200)
    const again = await transaction(provider, [
      post(penicillinAllergy(other)),
      post(penicillinAllergy(patientId)),
    ])
    expect(again.status).toBe(409)
    expect(again.body.issue[0].expression).toEqual(['Bundle.entry[1]'])
    expect(await countsOf(org.id)).toEqual({ ...before, records: 1, audited: 1 })
  })
})

describe('grouped creates and references', () => {
  it('resolves urn:uuid references to patients created between groups, whatever the Bundle’s order', async () => {
    const { org, provider, patientId } = await practice()
    const [first, second] = [
      'urn:uuid:5d0c1c51-2f64-4d43-8a53-0a0b6f6e1a01',
      'urn:uuid:5d0c1c51-2f64-4d43-8a53-0a0b6f6e1a02',
    ]
    const patient = (family: string): Patient => ({
      resourceType: 'Patient',
      name: [{ family, given: ['Ada'] }],
      gender: 'female',
      birthDate: '1985-12-10',
    })
    const subjects = [second, second, first, first, first, `Patient/${patientId}`, second, first]
    const entries: BundleEntry[] = [
      ...subjects.slice(0, 2).map((subject, n) => post(labResult(n, subject))),
      post(patient('First'), first),
      ...subjects.slice(2, 6).map((subject, n) => post(labResult(n + 2, subject))),
      post(patient('Second'), second),
      ...subjects.slice(6).map((subject, n) => post(labResult(n + 6, subject))),
    ]
    const { status, body } = await transaction(provider, entries)
    expect(status, JSON.stringify(body)).toBe(200)
    const answered = (body as Bundle).entry ?? []
    expect(answered.map((entry) => entry.response?.status)).toEqual(entries.map(() => '201 Created'))
    const idOf = (fullUrl: string) => {
      const at = entries.findIndex((entry) => entry.fullUrl === fullUrl)
      return `Patient/${answered[at]?.resource?.id}`
    }
    const expected = (subject: string) => (subject.startsWith('urn:') ? idOf(subject) : subject)
    const observations = answered.filter((entry) => entry.resource?.resourceType === 'Observation')
    expect(observations.map((entry) => (entry.resource as Observation).subject?.reference)).toEqual(
      subjects.map(expected),
    )
    expect(await countsOf(org.id)).toMatchObject({ records: 8, audited: 8 })
  })
})
