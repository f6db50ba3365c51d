import type { Bundle, CapabilityStatement, Provenance, Resource } from '@medplum/fhirtypes'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { buildTestApp } from '../../helpers/app.js'
import { bearer, type TestUser } from '../../helpers/factories.js'
import { expectFhir, fhirGet, smartToken } from '../../helpers/fhir.js'
import { newRecords, RECORDS_ENVIRONMENT, type Records, recordsResolver } from '../../helpers/records.js'
import { type Clinic, newClinic } from '../../helpers/scheduling.js'
import { usCoreErrors } from '../../helpers/us-core.js'

// Provenance of every record served (us-core-provenance): read as Provenance/[type]-[id], and
// returned with every type's search by _revinclude=Provenance:target.

let app: App
let records: Records
let reader: TestUser

beforeAll(async () => {
  app = await buildTestApp({ ...RECORDS_ENVIRONMENT }, undefined, { resolveHost: recordsResolver })
  records = await newRecords(app)
  reader = await records.org.user('ADMIN', 'PROVIDER', 'NURSE', 'FRONT_DESK', 'BILLING')
})
afterAll(async () => {
  await app.close()
})

const PROFILE = 'http://hl7.org/fhir/us/core/StructureDefinition/us-core-provenance|6.1.0'

async function condition(clinic: Clinic, user: TestUser): Promise<number> {
  const created = await app.inject({
    method: 'POST',
    url: `/api/patients/${clinic.patient.id}/conditions`,
    headers: bearer(user.token),
    payload: { icd10Code: 'I10', description: 'Essential hypertension' },
  })
  expect(created.statusCode, created.body).toBe(201)
  return created.json().data.id
}

const entries = (bundle: Bundle, mode: 'match' | 'include') =>
  (bundle.entry ?? [])
    .filter((entry) => entry.search?.mode === mode)
    .map((entry) => entry.resource as Resource)

describe('Provenance (us-core-provenance)', () => {
  it('of a record a provider wrote names the provider, on behalf of the organization, at the version’s time', async () => {
    const clinic = await newClinic(app)
    const id = await condition(clinic, clinic.doctor)
    const search = await fhirGet(
      app,
      clinic.doctor,
      `/Condition?patient=${clinic.patient.id}&_revinclude=Provenance:target`,
    )
    const bundle = expectFhir(search) as Bundle
    const [match] = entries(bundle, 'match')
    const [provenance] = entries(bundle, 'include') as Provenance[]
    expect(provenance).toMatchObject({
      id: `Condition-${id}`,
      meta: { profile: [PROFILE], versionId: match?.meta?.versionId },
      target: [{ reference: `Condition/${id}` }],
      recorded: match?.meta?.lastUpdated,
      agent: [
        {
          type: { coding: [{ code: 'author' }] },
          who: { reference: `Practitioner/${clinic.provider.id}` },
          onBehalfOf: { reference: `Organization/${clinic.org.id}` },
        },
      ],
    })
    expect(usCoreErrors(provenance as Provenance, PROFILE)).toEqual([])
    const read = await fhirGet(app, clinic.doctor, `/Provenance/Condition-${id}`)
    expect(expectFhir(read)).toEqual(provenance)
    const current = await fhirGet(app, clinic.doctor, `/Provenance/Condition-${id}/_history/1`)
    expect(expectFhir(current)).toEqual(provenance)
    const earlier = await fhirGet(app, clinic.doctor, `/Provenance/Condition-${id}/_history/2`)
    expect(earlier.statusCode).toBe(404)
  })

  it('of a record a user who is no provider wrote names the organization', async () => {
    const clinic = await newClinic(app)
    const id = await condition(clinic, await clinic.org.user('PROVIDER'))
    const read = await fhirGet(app, clinic.doctor, `/Provenance/Condition-${id}`)
    const provenance = expectFhir(read) as Provenance
    expect(provenance.agent).toEqual([
      {
        type: expect.anything(),
        who: { reference: `Organization/${clinic.org.id}` },
      },
    ])
    expect(usCoreErrors(provenance, PROFILE)).toEqual([])
  })

  it('comes with every type’s search, one per match, each meeting the profile', async () => {
    const statement = expectFhir(await app.inject({ url: '/fhir/R4/metadata' })) as CapabilityStatement
    // Every searchable type of records (a Group is a population to export, no record).
    const searchable = (statement.rest?.[0]?.resource ?? []).filter(
      (resource) =>
        !['Group', 'Provenance'].includes(resource.type) &&
        resource.interaction?.some((interaction) => interaction.code === 'search-type'),
    )
    expect(searchable.length).toBeGreaterThan(10)
    for (const { type, searchRevInclude } of searchable) {
      expect(searchRevInclude, type).toEqual(['Provenance:target'])
      const response = await fhirGet(app, reader, `/${type}?_count=100&_revinclude=Provenance:target`)
      const bundle = expectFhir(response) as Bundle
      const matches = entries(bundle, 'match')
      expect(matches.length, type).toBeGreaterThan(0)
      const provenances = entries(bundle, 'include') as Provenance[]
      expect(provenances.map((provenance) => provenance.target?.[0]?.reference).sort(), type).toEqual(
        matches.map((match) => `${type}/${match.id}`).sort(),
      )
      for (const provenance of provenances) {
        expect(usCoreErrors(provenance, PROFILE), provenance.id).toEqual([])
      }
    }
  })

  it('is another organization’s to read as its record is (403), and needs a scope that allows it', async () => {
    const clinic = await newClinic(app)
    const other = await newClinic(app)
    const id = await condition(clinic, clinic.doctor)
    expect((await fhirGet(app, other.doctor, `/Provenance/Condition-${id}`)).statusCode).toBe(403)

    const scoped = (scopes: string[]) => smartToken(app, clinic.org, clinic.doctor, scopes, clinic.patient.id)
    const withoutProvenance = scoped(['patient/Condition.rs'])
    expect((await fhirGet(app, withoutProvenance, `/Provenance/Condition-${id}`)).statusCode).toBe(403)
    const search = `/Condition?patient=${clinic.patient.id}&_revinclude=Provenance:target`
    const narrow = expectFhir(await fhirGet(app, withoutProvenance, search)) as Bundle
    expect(entries(narrow, 'match')).toHaveLength(1)
    expect(entries(narrow, 'include')).toEqual([])
    const withProvenance = scoped(['patient/Condition.rs', 'patient/Provenance.rs'])
    expect((await fhirGet(app, withProvenance, `/Provenance/Condition-${id}`)).statusCode).toBe(200)
    const wide = expectFhir(await fhirGet(app, withProvenance, search)) as Bundle
    expect(entries(wide, 'include').map((resource) => resource.id)).toEqual([`Condition-${id}`])
  })

  it('is searched by target: the provenance of each record named that the caller reads', async () => {
    const clinic = await newClinic(app)
    const other = await newClinic(app)
    const id = await condition(clinic, clinic.doctor)
    const path = `/Provenance?target=Condition/${id},Patient/${clinic.patient.id},Patient/${other.patient.id}`
    const bundle = expectFhir(await fhirGet(app, clinic.doctor, path)) as Bundle
    expect(entries(bundle, 'match').map((resource) => resource.id)).toEqual([
      `Condition-${id}`,
      `Patient-${clinic.patient.id}`,
    ])
    expect(bundle.total).toBe(2)
    const odd = '/Provenance?target=Condition/abc'
    const reported = expectFhir(await fhirGet(app, clinic.doctor, odd)) as Bundle
    expect(entries(reported, 'match')).toEqual([])
    expect(JSON.stringify(reported.entry)).toContain('target=Condition/abc')
    const strict = await fhirGet(app, clinic.doctor, odd, { prefer: 'handling=strict' })
    expect(strict.statusCode).toBe(400)
    const many = Array.from({ length: 101 }, (_, n) => `Condition/${n + 1}`).join(',')
    expect((await fhirGet(app, clinic.doctor, `/Provenance?target=${many}`)).statusCode).toBe(400)
  })

  it('is the only reverse include: another is reported, or refused under strict handling', async () => {
    const clinic = await newClinic(app)
    await condition(clinic, clinic.doctor)
    const path = `/Condition?patient=${clinic.patient.id}&_revinclude=Observation:patient`
    const lenient = expectFhir(await fhirGet(app, clinic.doctor, path)) as Bundle
    const outcome = (lenient.entry ?? []).find((entry) => entry.search?.mode === 'outcome')
    expect(JSON.stringify(outcome?.resource)).toContain('_revinclude=Observation:patient')
    expect(lenient.link?.[0]?.url).not.toContain('_revinclude')
    const strict = await fhirGet(app, clinic.doctor, path, { prefer: 'handling=strict' })
    expect(strict.statusCode).toBe(400)
    expect((await fhirGet(app, clinic.doctor, '/Provenance/Unknown-1')).statusCode).toBe(404)
  })
})
