import type { Bundle, CapabilityStatement, Resource } from '@medplum/fhirtypes'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { buildTestApp } from '../../helpers/app.js'
import { bearer, type TestUser } from '../../helpers/factories.js'
import { expectFhir, fhirGet } from '../../helpers/fhir.js'
import { newRecords, RECORDS_ENVIRONMENT, type Records, recordsResolver } from '../../helpers/records.js'
import { createProvider } from '../../helpers/scheduling.js'
import { usCoreErrors, usCoreFile } from '../../helpers/us-core.js'

// The CapabilityStatement claims exactly the US Core profiles the resources served claim: a type
// lists a US Core profile when its resources claim it in meta.profile, and no other.

let app: App
let records: Records
let reader: TestUser
let statement: CapabilityStatement

const usCoreServer = usCoreFile<CapabilityStatement>('CapabilityStatement-us-core-server.json')

beforeAll(async () => {
  app = await buildTestApp({ ...RECORDS_ENVIRONMENT }, undefined, { resolveHost: recordsResolver })
  records = await newRecords(app)
  // A provider with contact details, whose role claims US Core (a role without any cannot).
  await createProvider(app, records.makers.admin, { email: 'role@example.test' })
  // Vital signs of every measurement, each an Observation claiming its own profile.
  const vitals = await app.inject({
    method: 'POST',
    url: `/api/patients/${records.ids.patient}/vitals`,
    headers: bearer(records.makers.nurse.token),
    payload: {
      systolic: 120,
      diastolic: 80,
      heartRate: 70,
      respiratoryRate: 14,
      temperature: { value: 37, unit: 'C' },
      spo2: 98,
      heightCm: 170,
      weightKg: 65,
      painScore: 2,
    },
  })
  expect(vitals.statusCode, vitals.body).toBe(201)
  reader = await records.org.user('ADMIN', 'PROVIDER', 'NURSE', 'FRONT_DESK', 'BILLING')
  await signedDiagnosis()
  statement = expectFhir(await app.inject({ url: '/fhir/R4/metadata' })) as CapabilityStatement
})
afterAll(async () => {
  await app.close()
})

/** A signed note with a diagnosis: an encounter-diagnosis Condition among the records. */
async function signedDiagnosis() {
  const headers = bearer(records.makers.doctor.token)
  const created = await app.inject({
    method: 'POST',
    url: '/api/encounters',
    headers,
    payload: {
      patientId: records.ids.patient,
      providerId: records.ids.provider,
      encounterDate: '2024-05-02',
      encounterType: 'OFFICE_VISIT',
      soapNote: { assessment: { diagnoses: [{ icd10Code: 'I10', description: 'Essential hypertension' }] } },
    },
  })
  expect(created.statusCode, created.body).toBe(201)
  const id: number = created.json().data.id
  const signed = await app.inject({ method: 'POST', url: `/api/encounters/${id}/sign`, headers })
  expect(signed.statusCode, signed.body).toBe(200)
}

const isUsCore = (profile: string) => profile.startsWith('http://hl7.org/fhir/us/core/')

const served = () => statement.rest?.[0]?.resource ?? []

/** Every resource of the type the reader finds (the records hold far fewer than a page). */
async function resourcesOf(type: string): Promise<Resource[]> {
  const response = await fhirGet(app, reader, `/${type}?_count=100`)
  expect(response.statusCode, `${type}: ${response.body}`).toBe(200)
  const bundle = response.json() as Bundle
  expect(bundle.link?.some((link) => link.relation === 'next')).toBe(false)
  return (bundle.entry ?? [])
    .filter((entry) => entry.search?.mode === 'match')
    .map((entry) => entry.resource as Resource)
}

describe('GET /fhir/R4/metadata (US Core 6.1.0)', () => {
  it('instantiates the US Core Server CapabilityStatement of the vendored package', () => {
    expect(usCoreServer.version).toBe('6.1.0')
    expect(statement.instantiates).toContain(`${usCoreServer.url}|${usCoreServer.version}`)
  })

  it('lists the US Core profiles of the types whose resources claim one', () => {
    const listed = Object.fromEntries(
      served()
        .filter((resource) => resource.supportedProfile)
        .map((resource) => [resource.type, resource.supportedProfile]),
    )
    const profile = (...names: string[]) =>
      names.map((name) => `http://hl7.org/fhir/us/core/StructureDefinition/${name}|6.1.0`)
    expect(listed).toEqual({
      Patient: profile('us-core-patient'),
      Practitioner: profile('us-core-practitioner'),
      PractitionerRole: profile('us-core-practitionerrole'),
      Organization: profile('us-core-organization'),
      Location: profile('us-core-location'),
      AllergyIntolerance: profile('us-core-allergyintolerance'),
      MedicationRequest: profile('us-core-medicationrequest'),
      Condition: profile(
        'us-core-condition-problems-health-concerns',
        'us-core-condition-encounter-diagnosis',
      ),
      DiagnosticReport: profile('us-core-diagnosticreport-lab'),
      Encounter: profile('us-core-encounter'),
      DocumentReference: profile('us-core-documentreference'),
      Provenance: profile('us-core-provenance'),
      Observation: profile(
        'us-core-observation-lab',
        'us-core-vital-signs',
        'us-core-blood-pressure',
        'us-core-heart-rate',
        'us-core-respiratory-rate',
        'us-core-body-temperature',
        'us-core-pulse-oximetry',
        'us-core-body-height',
        'us-core-body-weight',
        'us-core-bmi',
        'us-core-simple-observation',
      ),
    })
    // Each is a profile US Core's server statement names for the type.
    for (const [type, claimed] of Object.entries(listed) as [string, string[]][]) {
      const theirs = usCoreServer.rest?.[0]?.resource?.find((resource) => resource.type === type)
      expect(theirs?.supportedProfile, type).toEqual(
        expect.arrayContaining(claimed.map((url) => url.split('|')[0])),
      )
    }
  })

  it('lists a profile for a type exactly when its resources claim it, and they meet it with 0 errors', async () => {
    // Provenance is searched by target only (us-core-provenance.test.ts checks its profile).
    const searchable = served().filter(
      (resource) =>
        resource.type !== 'Provenance' &&
        resource.interaction?.some((interaction) => interaction.code === 'search-type'),
    )
    expect(searchable.length).toBeGreaterThan(10)
    for (const { type, supportedProfile = [] } of searchable) {
      const resources = await resourcesOf(type)
      expect(resources.length, type).toBeGreaterThan(0)
      const claimed = new Set(
        resources.flatMap((resource) => (resource.meta?.profile ?? []).filter(isUsCore)),
      )
      expect([...claimed].sort(), type).toEqual([...supportedProfile].sort())
      for (const resource of resources) {
        for (const profile of (resource.meta?.profile ?? []).filter(isUsCore)) {
          expect(usCoreErrors(resource, profile), `${type}/${resource.id}`).toEqual([])
        }
      }
    }
  })

  it('lists MedicationRequest with every search parameter of US Core’s combinations, of US Core’s types, and its interactions', () => {
    const theirs = usCoreServer.rest?.[0]?.resource?.find((resource) => resource.type === 'MedicationRequest')
    const ours = served().find((resource) => resource.type === 'MedicationRequest')
    const combined = (theirs?.extension ?? [])
      .filter((extension) => extension.url.endsWith('/capabilitystatement-search-parameter-combination'))
      .flatMap((combination) => (combination.extension ?? []).filter((part) => part.url === 'required'))
      .map((part) => part.valueString as string)
    expect(new Set(combined)).toEqual(new Set(['patient', 'intent', 'status', 'encounter', 'authoredon']))
    const typeOf = (resource: typeof ours, name: string) =>
      resource?.searchParam?.find((parameter) => parameter.name === name)?.type
    for (const name of combined) expect(typeOf(ours, name), name).toBe(typeOf(theirs, name))
    const codes = ours?.interaction?.map((interaction) => interaction.code) ?? []
    const asked = (theirs?.interaction ?? [])
      .filter((interaction) => ['SHALL', 'SHOULD'].includes(interaction.extension?.[0]?.valueCode ?? ''))
      .map((interaction) => interaction.code)
    expect(codes).toEqual(expect.arrayContaining(asked))
    // The medication is always a code: there is no Medication to include.
    expect(ours?.searchInclude).not.toContain('MedicationRequest:medication')
  })

  it('lists, for each type US Core names, the search parameters of its SHALL combinations, of the same types', () => {
    const expectation = (element: { extension?: { url: string; valueCode?: string }[] }) =>
      element.extension?.find((extension) => extension.url.endsWith('capabilitystatement-expectation'))
        ?.valueCode
    const missing: string[] = []
    for (const ours of served()) {
      const theirs = usCoreServer.rest?.[0]?.resource?.find((resource) => resource.type === ours.type)
      if (!theirs) continue
      const shall = new Set(
        (theirs.extension ?? [])
          .filter((extension) => extension.url.endsWith('search-parameter-combination'))
          .filter((combination) => expectation(combination) === 'SHALL')
          .flatMap((combination) => combination.extension ?? [])
          .flatMap((part) => (part.url === 'required' && part.valueString ? [part.valueString] : [])),
      )
      for (const parameter of theirs.searchParam ?? []) {
        if (expectation(parameter) === 'SHALL') shall.add(parameter.name)
      }
      const listed = new Map(ours.searchParam?.map((parameter) => [parameter.name, parameter.type]))
      for (const name of shall) {
        const type = theirs.searchParam?.find((parameter) => parameter.name === name)?.type
        if (listed.get(name) !== type) missing.push(`${ours.type}?${name}`)
      }
    }
    expect(missing).toEqual([])
  })

  it('lists DiagnosticReport as it works: reads, versions and searches, includes, no writes', () => {
    const report = served().find((resource) => resource.type === 'DiagnosticReport')
    expect(report?.interaction?.map((interaction) => interaction.code).sort()).toEqual(
      ['history-instance', 'history-type', 'read', 'search-type', 'vread'].sort(),
    )
    expect(report?.searchParam?.map((parameter) => parameter.name).sort()).toEqual(
      ['_id', '_lastUpdated', 'category', 'code', 'date', 'patient', 'status', 'subject'].sort(),
    )
    expect(report?.searchInclude?.sort()).toEqual(['DiagnosticReport:patient', 'DiagnosticReport:result'])
  })

  it('reads, vreads and searches the directory types, and writes none of them', () => {
    for (const type of ['PractitionerRole', 'Organization', 'Location']) {
      const resource = served().find((candidate) => candidate.type === type)
      const codes = resource?.interaction?.map((interaction) => interaction.code) ?? []
      expect(codes, type).toEqual(expect.arrayContaining(['read', 'vread', 'search-type']))
      expect(codes, type).not.toContain('create')
      expect(codes, type).not.toContain('update')
    }
    const role = served().find((resource) => resource.type === 'PractitionerRole')
    expect(role?.searchParam?.map((parameter) => parameter.name)).toEqual(
      expect.arrayContaining(['practitioner', 'specialty']),
    )
    expect(role?.searchInclude).toContain('PractitionerRole:practitioner')
  })
})
