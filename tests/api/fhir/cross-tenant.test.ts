import type { Bundle, CapabilityStatement, OperationOutcome } from '@medplum/fhirtypes'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { buildTestApp } from '../../helpers/app.js'
import { bearer, type TestUser } from '../../helpers/factories.js'
import { fhirErrors } from '../../helpers/fhir-validator.js'
import {
  newRecords,
  RECORDS_ENVIRONMENT,
  type RecordKind,
  type Records,
  recordsResolver,
} from '../../helpers/records.js'

// Organization isolation on the FHIR interface, for every type the CapabilityStatement lists: with
// another organization's ids and references, reads are refused and searches find nothing.

let app: App
let mine: Records
let theirs: Records
let reader: TestUser
let statement: CapabilityStatement

/** The kinds of REST record each FHIR type is made from; a new type must be added here. */
const KINDS_OF_TYPE: Record<string, RecordKind[]> = {
  Patient: ['patient'],
  Practitioner: ['provider'],
  PractitionerRole: ['provider'],
  Appointment: ['appointment'],
  Encounter: ['encounter'],
  Observation: ['vitals', 'lab-results'],
  DiagnosticReport: ['lab-results'],
  Condition: ['conditions'],
  AllergyIntolerance: ['allergies'],
  MedicationStatement: ['medications'],
  MedicationRequest: ['medications'],
  DocumentReference: ['document'],
  Binary: ['document'],
  // Groups are all-patients and provider-[id]; a bare number names none.
  Group: ['provider'],
}

/** The types whose one record is the organization itself, under its id (the practice). */
const ORGANIZATION_TYPES = ['Organization', 'Location']

/** The ids of another organization's records of a type; a Provenance's, of each record's ([type]-[id]). */
const theirIdsOf = (type: string): (number | string)[] => {
  if (ORGANIZATION_TYPES.includes(type)) return [theirs.org.id]
  if (type !== 'Provenance') return (KINDS_OF_TYPE[type] ?? []).map((kind) => theirs.ids[kind])
  const recordTypes = [...Object.keys(KINDS_OF_TYPE), ...ORGANIZATION_TYPES].filter(
    (recordType) => !['Binary', 'Group'].includes(recordType),
  )
  return recordTypes.flatMap((recordType) => theirIdsOf(recordType).map((id) => `${recordType}-${id}`))
}

/** The record a reference search parameter names, by parameter name. */
const REFERENCE_TARGETS: Record<string, [string, RecordKind]> = {
  patient: ['Patient', 'patient'],
  subject: ['Patient', 'patient'],
  practitioner: ['Practitioner', 'provider'],
  encounter: ['Encounter', 'encounter'],
  target: ['Patient', 'patient'],
}

beforeAll(async () => {
  app = await buildTestApp({ ...RECORDS_ENVIRONMENT }, undefined, { resolveHost: recordsResolver })
  mine = await newRecords(app)
  theirs = await newRecords(app)
  reader = await mine.org.user('ADMIN', 'PROVIDER', 'NURSE', 'FRONT_DESK', 'BILLING')
  statement = (await app.inject({ url: '/fhir/R4/metadata' })).json()
})
afterAll(async () => {
  await app.close()
})

const resourcesOf = () => statement.rest?.[0]?.resource ?? []

describe('FHIR organization isolation', () => {
  it('knows the records behind every FHIR type it serves', () => {
    for (const resource of resourcesOf()) {
      expect(
        KINDS_OF_TYPE[resource.type] ?? [...ORGANIZATION_TYPES, 'Provenance'].includes(resource.type),
        resource.type,
      ).toBeTruthy()
    }
  })

  it('refuses a read of another organization’s record with 403, showing nothing of it', async () => {
    for (const resource of resourcesOf()) {
      for (const id of theirIdsOf(resource.type)) {
        const response = await app.inject({
          url: `/fhir/R4/${resource.type}/${id}`,
          headers: bearer(reader.token),
        })
        // Another kind of clinical record under the same id is not this type: 404 is as closed.
        expect([403, 404], `${resource.type} ${id}`).toContain(response.statusCode)
        expect(response.body).not.toContain(theirs.marker)
        const outcome = response.json() as OperationOutcome
        expect(outcome.resourceType).toBe('OperationOutcome')
        expect(fhirErrors(outcome)).toEqual([])
      }
    }
  })

  it('shows no Group of another organization, nor exports it', async () => {
    const group = `provider-${theirs.ids.provider}`
    const read = await app.inject({ url: `/fhir/R4/Group/${group}`, headers: bearer(reader.token) })
    expect(read.statusCode).toBe(404)
    const search = await app.inject({ url: `/fhir/R4/Group?_id=${group}`, headers: bearer(reader.token) })
    expect((search.json() as Bundle).entry).toBeUndefined()
    const exported = await app.inject({
      url: `/fhir/R4/Group/${group}/$export`,
      headers: { ...bearer(reader.token), prefer: 'respond-async' },
    })
    expect(exported.statusCode).toBe(404)
    expect(exported.body).not.toContain(theirs.marker)
  })

  it('finds nothing of another organization by _id or by reference, and nothing of it unfiltered', async () => {
    const searchable = resourcesOf().filter((resource) =>
      resource.interaction?.some((interaction) => interaction.code === 'search-type'),
    )
    expect(searchable.length).toBeGreaterThan(5)
    for (const resource of searchable) {
      const searches = [
        ...theirIdsOf(resource.type).map((id) => `_id=${id}`),
        ...(resource.searchParam ?? [])
          .filter((parameter) => parameter.type === 'reference' && REFERENCE_TARGETS[parameter.name])
          .map((parameter) => {
            const [type, kind] = REFERENCE_TARGETS[parameter.name] as [string, RecordKind]
            return `${parameter.name}=${type}/${theirs.ids[kind]}`
          }),
        // Values that name no record of ours match nothing (and are no error).
        '_id=not-a-number',
        '_count=100',
      ]
      for (const search of searches) {
        const response = await app.inject({
          url: `/fhir/R4/${resource.type}?${search}`,
          headers: bearer(reader.token),
        })
        expect(response.statusCode, `${resource.type}?${search}`).toBe(200)
        expect(response.body, `${resource.type}?${search}`).not.toContain(theirs.marker)
        const bundle = response.json() as Bundle
        const theirIds = theirIdsOf(resource.type).map(String)
        const found = (bundle.entry ?? []).filter((entry) => entry.search?.mode === 'match')
        if (!search.startsWith('_count')) expect(found, `${resource.type}?${search}`).toEqual([])
        else for (const entry of found) expect(theirIds).not.toContain(entry.resource?.id)
      }
    }
  })
})
