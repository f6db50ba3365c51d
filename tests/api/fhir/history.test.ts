import type { Appointment, Bundle, CapabilityStatement, Condition, Patient } from '@medplum/fhirtypes'
import { Client } from 'fhir-kit-client'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { bearer, createPatient, daysFromToday, newOrganization } from '../../helpers/factories.js'
import { asSent, listeningFhirApp } from '../../helpers/fhir-client.js'
import { fhirErrors } from '../../helpers/fhir-validator.js'
import { booked, newPractice } from '../../helpers/scheduling.js'

// Instance history and vread of earlier versions, read with fhir-kit-client.

let app: App
let baseUrl: string

beforeAll(async () => {
  ;({ app, baseUrl } = await listeningFhirApp())
})
afterAll(async () => {
  await app.close()
})

/** A patient renamed twice through the REST API: three versions. */
async function renamedPatient() {
  const org = await newOrganization(app)
  const nurse = await org.user('NURSE')
  const id = await createPatient(app, nurse)
  const created = await app.inject({ url: `/api/patients/${id}`, headers: bearer(nurse.token) })
  const originalLastName: string = created.json().data.identification.lastName
  for (const lastName of ['Byron', 'King']) {
    const answer = await app.inject({
      method: 'PATCH',
      url: `/api/patients/${id}`,
      headers: { ...bearer(nurse.token), 'content-type': 'application/merge-patch+json' },
      payload: { identification: { lastName } },
    })
    expect(answer.statusCode, answer.body).toBe(200)
  }
  return { org, nurse, id, originalLastName }
}

describe('the history of a record', () => {
  it('lists every version newest first, each a valid resource as it was', async () => {
    const { nurse, id, originalLastName } = await renamedPatient()
    const client = new Client({ baseUrl, bearerToken: nurse.token })
    const history = (await client.history({ resourceType: 'Patient', id: String(id) })) as unknown as Bundle
    expect([history.resourceType, history.type, history.total]).toEqual(['Bundle', 'history', 3])
    const entries = history.entry ?? []
    expect(entries.map((entry) => entry.resource?.meta?.versionId)).toEqual(['3', '2', '1'])
    expect(entries.map((entry) => (entry.resource as Patient).name?.[0]?.family)).toEqual([
      'King',
      'Byron',
      originalLastName,
    ])
    expect(entries.map((entry) => [entry.request?.method, entry.response?.status])).toEqual([
      ['PUT', '200 OK'],
      ['PUT', '200 OK'],
      ['POST', '201 Created'],
    ])
    for (const entry of entries) {
      expect(entry.fullUrl).toBe(`${baseUrl}/Patient/${id}`)
      expect(fhirErrors(entry.resource as Patient)).toEqual([])
    }
    expect(fhirErrors(history)).toEqual([])
  })

  it('pages with _count and a next link a client follows', async () => {
    const { nurse, id } = await renamedPatient()
    const client = new Client({ baseUrl, bearerToken: nurse.token })
    let bundle = (await client.history({
      resourceType: 'Patient',
      id: String(id),
      options: { searchParams: { _count: 2 } },
    } as never)) as unknown as Bundle
    const versions: string[] = []
    for (let page = 0; page < 5; page++) {
      versions.push(...(bundle.entry ?? []).map((entry) => entry.resource?.meta?.versionId as string))
      const next = client.nextPage({ bundle: bundle as never })
      if (!next) break
      bundle = (await next) as unknown as Bundle
    }
    expect(versions).toEqual(['3', '2', '1'])
  })

  it('reads an earlier version (vread), and 404 for one never made', async () => {
    const { nurse, id, originalLastName } = await renamedPatient()
    const client = new Client({ baseUrl, bearerToken: nurse.token })
    const first = (await client.vread({ resourceType: 'Patient', id: String(id), version: '1' })) as Patient
    expect([first.meta?.versionId, first.name?.[0]?.family]).toEqual(['1', originalLastName])
    const current = (await client.vread({ resourceType: 'Patient', id: String(id), version: '3' })) as Patient
    expect(current.name?.[0]?.family).toBe('King')
    for (const version of ['4', '0', 'x']) {
      const answer = await app.inject({
        url: `/fhir/R4/Patient/${id}/_history/${version}`,
        headers: bearer(nurse.token),
      })
      expect(answer.statusCode, version).toBe(404)
      expect(answer.json().resourceType).toBe('OperationOutcome')
    }
  })

  it('keeps to the caller’s organization and the record’s read rules', async () => {
    const { id } = await renamedPatient()
    const stranger = await (await newOrganization(app)).user('NURSE')
    for (const path of [`Patient/${id}/_history`, `Patient/${id}/_history/1`]) {
      const answer = await app.inject({ url: `/fhir/R4/${path}`, headers: bearer(stranger.token) })
      expect(answer.statusCode, path).toBe(403)
    }
    const practice = await newPractice(app)
    const appointment = await booked(app, practice, daysFromToday(3), '10:00:00')
    const biller = await practice.org.user('BILLING')
    const refused = await app.inject({
      url: `/fhir/R4/Appointment/${appointment.id}/_history`,
      headers: bearer(biller.token),
    })
    expect(refused.statusCode).toBe(403)
    const allowed = await app.inject({
      url: `/fhir/R4/Appointment/${appointment.id}/_history`,
      headers: bearer(practice.nurse.token),
    })
    const [entry] = (allowed.json() as Bundle<Appointment>).entry ?? []
    expect(entry?.resource?.resourceType).toBe('Appointment')
  })

  it('is announced in the CapabilityStatement for the types that keep versions', async () => {
    const { nurse } = await renamedPatient()
    const client = new Client({ baseUrl, bearerToken: nurse.token })
    const statement = (await client.capabilityStatement()) as unknown as CapabilityStatement
    const resources = statement.rest?.[0]?.resource ?? []
    const withHistory = resources
      .filter((resource) =>
        resource.interaction?.some((interaction) => interaction.code === 'history-instance'),
      )
      .map((resource) => resource.type)
    expect(withHistory.sort()).toEqual([
      'AllergyIntolerance',
      'Appointment',
      'Condition',
      'DiagnosticReport',
      'DocumentReference',
      'Encounter',
      'MedicationRequest',
      'MedicationStatement',
      'Observation',
      'Patient',
      'Practitioner',
      'PractitionerRole',
    ])
    expect(statement.rest?.[0]?.interaction?.map((interaction) => interaction.code)).toContain(
      'history-system',
    )
  })
})

describe('the history of a type', () => {
  it('lists the versions of the organization’s records changed since _since, a deletion as a DELETE', async () => {
    const { org, nurse, id } = await renamedPatient()
    const admin = await org.user('ADMIN')
    const other = await createPatient(app, nurse)
    const since = new Date()
    await new Promise((resolve) => setTimeout(resolve, 5))
    const removed = await app.inject({
      method: 'DELETE',
      url: `/api/patients/${other}`,
      headers: bearer(admin.token),
    })
    expect(removed.statusCode).toBe(200)
    const client = new Client({ baseUrl, bearerToken: nurse.token })
    const all = (await client.history({ resourceType: 'Patient' })) as unknown as Bundle<Patient>
    expect([all.type, all.total]).toEqual(['history', 5])
    expect(fhirErrors(all)).toEqual([])
    const changedAnswer = await app.inject({
      url: `/fhir/R4/Patient/_history?_since=${encodeURIComponent(since.toISOString())}`,
      headers: bearer(nurse.token),
    })
    const changed = changedAnswer.json() as Bundle<Patient>
    expect(changed.total).toBe(1)
    const [deletion] = changed.entry ?? []
    expect(deletion?.request).toEqual({ method: 'DELETE', url: `Patient/${other}` })
    expect(deletion?.resource).toBeUndefined()
    expect(deletion?.response?.status).toBe('204 No Content')
    const renamedVersions = (all.entry ?? []).filter((entry) => entry.resource?.id === String(id))
    expect(renamedVersions.map((entry) => entry.resource?.meta?.versionId)).toEqual(['3', '2', '1'])
    // Another organization's history holds none of these.
    const stranger = await (await newOrganization(app)).user('NURSE')
    const theirs = (await new Client({ baseUrl, bearerToken: stranger.token }).history({
      resourceType: 'Patient',
    })) as unknown as Bundle
    expect(theirs.total).toBe(0)
    const bad = await app.inject({
      url: '/fhir/R4/Patient/_history?_since=yesterday',
      headers: bearer(nurse.token),
    })
    expect(bad.statusCode).toBe(400)
  })
})

const CONDITION_CATEGORY = 'http://terminology.hl7.org/CodeSystem/condition-category'
const CONDITION_CLINICAL = 'http://terminology.hl7.org/CodeSystem/condition-clinical'

/** A problem-list Condition of the patient, as a client sends one. */
const problem = (patientId: number): Condition => ({
  resourceType: 'Condition',
  clinicalStatus: { coding: [{ system: CONDITION_CLINICAL, code: 'active' }] },
  category: [{ coding: [{ system: CONDITION_CATEGORY, code: 'problem-list-item' }] }],
  code: { coding: [{ system: 'http://hl7.org/fhir/sid/icd-10-cm', code: 'E11.9' }], text: 'Type 2 diabetes' },
  subject: { reference: `Patient/${patientId}` },
})

/** A provider's practice with a patient who has a Condition changed once and a lab result. */
async function chart() {
  const org = await newOrganization(app)
  const provider = await org.user('PROVIDER')
  const patientId = await createPatient(app, provider)
  const client = new Client({ baseUrl, bearerToken: provider.token })
  const condition = (await client.create({
    resourceType: 'Condition',
    body: asSent(problem(patientId)),
  })) as unknown as Condition & { id: string }
  await client.update({
    resourceType: 'Condition',
    id: condition.id,
    body: { ...condition, clinicalStatus: { coding: [{ system: CONDITION_CLINICAL, code: 'resolved' }] } },
    options: { headers: { 'if-match': 'W/"1"' } },
  })
  const lab = await app.inject({
    method: 'POST',
    url: `/api/patients/${patientId}/lab-results`,
    headers: bearer(provider.token),
    payload: { testCode: '718-7', testName: 'Hemoglobin', value: 13.5 },
  })
  expect(lab.statusCode, lab.body).toBe(201)
  return { org, provider, patientId, client, conditionId: condition.id, labId: String(lab.json().data.id) }
}

const versionsIn = (bundle: Bundle) =>
  (bundle.entry ?? []).map((entry) => `${entry.request?.url?.split('/')[0]}/${entry.resource?.id ?? ''}`)

describe('the history of clinical records', () => {
  it('keeps each version of a Condition; a type lists its own kind only, valid', async () => {
    const { client, conditionId, labId } = await chart()
    const own = (await client.history({
      resourceType: 'Condition',
      id: conditionId,
    })) as unknown as Bundle<Condition>
    expect(own.total).toBe(2)
    expect(own.entry?.map((entry) => entry.resource?.clinicalStatus?.coding?.[0]?.code)).toEqual([
      'resolved',
      'active',
    ])
    expect(fhirErrors(own)).toEqual([])
    const conditions = (await client.history({ resourceType: 'Condition' })) as unknown as Bundle
    expect(conditions.entry?.map((entry) => entry.resource?.resourceType)).toEqual(['Condition', 'Condition'])
    const observations = (await client.history({ resourceType: 'Observation' })) as unknown as Bundle
    expect(observations.entry?.map((entry) => entry.resource?.id)).toEqual([labId])
    expect(fhirErrors(observations)).toEqual([])
  })
})

describe('the history of a deleted patient', () => {
  it('lists its versions, the deletion first, though a read of it is 410', async () => {
    const { org, nurse, id } = await renamedPatient()
    const admin = await org.user('ADMIN')
    const removed = await app.inject({
      method: 'DELETE',
      url: `/api/patients/${id}`,
      headers: bearer(admin.token),
    })
    expect(removed.statusCode).toBe(200)
    const read = await app.inject({ url: `/fhir/R4/Patient/${id}`, headers: bearer(nurse.token) })
    expect(read.statusCode).toBe(410)
    const history = (await new Client({ baseUrl, bearerToken: nurse.token }).history({
      resourceType: 'Patient',
      id: String(id),
    })) as unknown as Bundle
    expect(history.entry?.map((entry) => entry.request?.method)).toEqual(['DELETE', 'PUT', 'PUT', 'POST'])
    // Its earlier versions stay readable; the deletion itself is 410.
    const vread = (version: number) =>
      app.inject({ url: `/fhir/R4/Patient/${id}/_history/${version}`, headers: bearer(nurse.token) })
    const first = await vread(1)
    expect(first.statusCode).toBe(200)
    expect(fhirErrors(first.json())).toEqual([])
    expect((await vread(4)).statusCode).toBe(410)
    expect((await vread(5)).statusCode).toBe(404)
    const stranger = await (await newOrganization(app)).user('NURSE')
    const theirs = await app.inject({
      url: `/fhir/R4/Patient/${id}/_history`,
      headers: bearer(stranger.token),
    })
    expect(theirs.statusCode).toBeGreaterThanOrEqual(403)
  })
})

describe('the history of the whole system', () => {
  it('lists every type’s versions the caller may search, newest change first, paged', async () => {
    const { org, provider, client, patientId, conditionId, labId } = await chart()
    const all = (await client.request('_history')) as unknown as Bundle
    expect(all.type).toBe('history')
    expect(fhirErrors(all)).toEqual([])
    // A lab result is both its DiagnosticReport and its Observation.
    expect(versionsIn(all)).toEqual([
      `DiagnosticReport/${labId}`,
      `Observation/${labId}`,
      `Condition/${conditionId}`,
      `Condition/${conditionId}`,
      `Patient/${patientId}`,
    ])
    expect(all.total).toBe(5)
    const times = (all.entry ?? []).map((entry) => entry.resource?.meta?.lastUpdated ?? '')
    expect([...times].sort().reverse()).toEqual(times)

    const second = (await client.request('_history?_count=3&_page=1')) as unknown as Bundle
    expect(versionsIn(second)).toEqual([`Condition/${conditionId}`, `Patient/${patientId}`])
    const first = (await client.request('_history?_count=3')) as unknown as Bundle
    expect(versionsIn(first)).toEqual(versionsIn(all).slice(0, 3))
    expect(first.link?.find((link) => link.relation === 'next')?.url).toMatch(/_count=3&_page=1$/)

    // The front desk searches no type through FHIR (it finds patients by the REST search): nothing,
    // rather than a refusal.
    const frontDesk = await org.user('FRONT_DESK')
    const theirs = (await new Client({ baseUrl, bearerToken: frontDesk.token }).request(
      '_history',
    )) as unknown as Bundle
    expect([theirs.type, theirs.total, theirs.entry]).toEqual(['history', 0, undefined])
    // Another organization sees none of it.
    const stranger = await (await newOrganization(app)).user('PROVIDER')
    const none = (await new Client({ baseUrl, bearerToken: stranger.token }).request(
      '_history',
    )) as unknown as Bundle
    expect(none.total).toBe(0)

    const records = await app.db
      .selectFrom('audit_log')
      .select(['resource_type', 'resource_ids'])
      .where('organization_id', '=', org.id)
      .where('user_id', '=', provider.id)
      .where('action', 'in', ['SEARCH', 'LIST', 'READ'])
      .orderBy('id')
      .execute()
    expect(records).toEqual(expect.arrayContaining([{ resource_type: 'patient', resource_ids: [patientId] }]))
    const deep = await app.inject({
      url: '/fhir/R4/_history?_count=100&_page=100',
      headers: bearer(provider.token),
    })
    expect(deep.statusCode).toBe(400)
  })
})
