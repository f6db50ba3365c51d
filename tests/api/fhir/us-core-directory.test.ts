import type { Bundle, Location, Organization, Practitioner, PractitionerRole } from '@medplum/fhirtypes'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { buildTestApp } from '../../helpers/app.js'
import type { TestUser } from '../../helpers/factories.js'
import { expectFhir, fhirGet, matchIds, smartToken } from '../../helpers/fhir.js'
import { createProvider, newPractice, type Practice } from '../../helpers/scheduling.js'
import { usCoreErrors } from '../../helpers/us-core.js'

// The practice's directory as US Core 6.1.0: its Organization, its one Location (under the
// organization's id) and a PractitionerRole per provider (under the provider's id).

let app: App

beforeAll(async () => {
  app = await buildTestApp()
})
afterAll(async () => {
  await app.close()
})

const PROFILES = 'http://hl7.org/fhir/us/core/StructureDefinition'
const NUCC = 'http://nucc.org/provider-taxonomy'

const get = (user: TestUser | string, path: string) => fhirGet(app, user, path)

async function read<R>(user: TestUser | string, path: string): Promise<R> {
  const response = await get(user, path)
  expect(response.statusCode, response.body).toBe(200)
  return expectFhir(response) as R
}

async function searched(user: TestUser | string, path: string): Promise<Bundle> {
  const response = await get(user, path)
  expect(response.statusCode, response.body).toBe(200)
  return expectFhir(response) as Bundle
}

const organizationName = async (practice: Practice) =>
  (
    await app.db
      .selectFrom('organizations')
      .select('name')
      .where('id', '=', practice.org.id)
      .executeTakeFirstOrThrow()
  ).name

describe('GET /fhir/R4/Organization', () => {
  it('reads the practice as a US Core Organization that validates with 0 errors', async () => {
    const practice = await newPractice(app)
    const organization = await read<Organization>(practice.nurse, `/Organization/${practice.org.id}`)
    expect(organization).toEqual({
      resourceType: 'Organization',
      id: String(practice.org.id),
      meta: {
        versionId: '1',
        lastUpdated: expect.any(String),
        profile: [`${PROFILES}/us-core-organization|6.1.0`],
      },
      active: true,
      name: await organizationName(practice),
    })
    expect(usCoreErrors(organization, `${PROFILES}/us-core-organization`)).toEqual([])
  })

  it('answers 404 for another organization and for none, and finds only the caller’s own', async () => {
    const practice = await newPractice(app)
    const other = await newPractice(app)
    for (const id of [other.org.id, 2_000_000_000]) {
      const response = await get(practice.nurse, `/Organization/${id}`)
      expect(response.statusCode).toBe(404)
      expect(response.body).not.toContain(await organizationName(other))
    }
    expect(matchIds(await searched(practice.nurse, '/Organization'))).toEqual([practice.org.id])
    expect(matchIds(await searched(practice.nurse, `/Organization?_id=${other.org.id}`))).toEqual([])
    expect(matchIds(await searched(practice.nurse, '/Organization?name=pRACTICE'))).toEqual([practice.org.id])
    expect(matchIds(await searched(practice.nurse, '/Organization?name=zzz'))).toEqual([])
  })

  it('is read-only', async () => {
    const practice = await newPractice(app)
    const response = await app.inject({
      method: 'PUT',
      url: `/fhir/R4/Organization/${practice.org.id}`,
      headers: { authorization: `Bearer ${practice.admin.token}`, 'content-type': 'application/fhir+json' },
      payload: { resourceType: 'Organization', id: String(practice.org.id), name: 'Renamed' },
    })
    expect(response.statusCode).toBe(405)
  })
})

describe('GET /fhir/R4/Location', () => {
  it('reads the practice’s one place under its organization’s id, a US Core Location', async () => {
    const practice = await newPractice(app)
    const location = await read<Location>(practice.nurse, `/Location/${practice.org.id}`)
    expect(location).toEqual({
      resourceType: 'Location',
      id: String(practice.org.id),
      meta: {
        versionId: '1',
        lastUpdated: expect.any(String),
        profile: [`${PROFILES}/us-core-location|6.1.0`],
      },
      status: 'active',
      name: await organizationName(practice),
      managingOrganization: { reference: `Organization/${practice.org.id}` },
    })
    expect(usCoreErrors(location, `${PROFILES}/us-core-location`)).toEqual([])
  })

  it('answers 404 for another organization’s and finds only the caller’s own, by name', async () => {
    const practice = await newPractice(app)
    const other = await newPractice(app)
    expect((await get(practice.nurse, `/Location/${other.org.id}`)).statusCode).toBe(404)
    expect(matchIds(await searched(practice.nurse, '/Location'))).toEqual([practice.org.id])
    expect(matchIds(await searched(practice.nurse, '/Location?name=practice'))).toEqual([practice.org.id])
    expect(matchIds(await searched(practice.nurse, `/Location?_id=${other.org.id}`))).toEqual([])
    expect(matchIds(await searched(practice.nurse, '/Location?name=zzz'))).toEqual([])
  })
})

describe('GET /fhir/R4/PractitionerRole', () => {
  it('reads a provider’s role under the provider’s id, a US Core PractitionerRole', async () => {
    const practice = await newPractice(app)
    const provider = await createProvider(app, practice.admin, {
      specialty: 'Cardiology',
      email: 'heart@example.test',
      phoneNumber: '+15555550123',
    })
    const role = await read<PractitionerRole>(practice.nurse, `/PractitionerRole/${provider.id}`)
    expect(role).toEqual({
      resourceType: 'PractitionerRole',
      id: String(provider.id),
      meta: {
        versionId: '1',
        lastUpdated: expect.any(String),
        profile: [`${PROFILES}/us-core-practitionerrole|6.1.0`],
      },
      active: true,
      practitioner: { reference: `Practitioner/${provider.id}` },
      organization: { reference: `Organization/${practice.org.id}` },
      location: [{ reference: `Location/${practice.org.id}` }],
      specialty: [{ text: 'Cardiology' }],
      telecom: [
        { system: 'email', value: 'heart@example.test', use: 'work' },
        { system: 'phone', value: '+15555550123', use: 'work' },
      ],
    })
    expect(usCoreErrors(role, `${PROFILES}/us-core-practitionerrole`)).toEqual([])
  })

  it('claims no profile for a provider without contact details, which US Core requires of a role', async () => {
    const practice = await newPractice(app)
    const role = await read<PractitionerRole>(practice.nurse, `/PractitionerRole/${practice.provider.id}`)
    expect(role.telecom).toBeUndefined()
    expect(role.meta?.profile).toBeUndefined()
    expect(usCoreErrors(role, `${PROFILES}/us-core-practitionerrole`).join('\n')).toMatch(/telecom/)
  })

  it('searches by practitioner and specialty (free text, whole and case-insensitive)', async () => {
    const practice = await newPractice(app)
    const cardiologist = await createProvider(app, practice.admin, { specialty: 'Cardiology' })
    const other = await newPractice(app)
    const family = practice.provider.id
    const cases: [string, number[]][] = [
      ['', [family, cardiologist.id]],
      [`practitioner=Practitioner/${cardiologist.id}`, [cardiologist.id]],
      [`practitioner=${family}`, [family]],
      [`practitioner=Practitioner/${other.provider.id}`, []],
      ['specialty=cardiology', [cardiologist.id]],
      ['specialty=Family%20Medicine,Cardiology', [family, cardiologist.id]],
      ['specialty=cardio', []],
      [`specialty=${encodeURIComponent(`${NUCC}|207RC0000X`)}`, []],
      [`_id=${other.provider.id}`, []],
    ]
    for (const [query, ids] of cases) {
      expect(matchIds(await searched(practice.nurse, `/PractitionerRole?${query}`)), query).toEqual(ids)
    }
    expect((await get(practice.nurse, `/PractitionerRole/${other.provider.id}`)).statusCode).toBe(403)
  })

  it('includes the practitioner, the organization and the location it references', async () => {
    const practice = await newPractice(app)
    const bundle = await searched(
      practice.nurse,
      `/PractitionerRole?practitioner=${practice.provider.id}&_include=PractitionerRole:practitioner&_include=PractitionerRole:organization&_include=PractitionerRole:location`,
    )
    expect(bundle.entry?.find((entry) => entry.search?.mode === 'outcome')).toBeUndefined()
    const included = (bundle.entry ?? [])
      .filter((entry) => entry.search?.mode === 'include')
      .map((entry) => `${entry.resource?.resourceType}/${entry.resource?.id}`)
    expect(included.sort()).toEqual(
      [
        `Location/${practice.org.id}`,
        `Organization/${practice.org.id}`,
        `Practitioner/${practice.provider.id}`,
      ].sort(),
    )
  })
})

describe('GET /fhir/R4/Practitioner (US Core)', () => {
  it('claims us-core-practitioner and validates against it with 0 errors', async () => {
    const practice = await newPractice(app)
    const full = await createProvider(app, practice.admin, {
      email: 'grace@example.test',
      phoneNumber: '+15555550100',
    })
    const bare = await createProvider(app, practice.admin, { title: null, specialty: null })
    for (const id of [full.id, bare.id]) {
      const practitioner = await read<Practitioner>(practice.nurse, `/Practitioner/${id}`)
      expect(practitioner.meta?.profile).toEqual([`${PROFILES}/us-core-practitioner|6.1.0`])
      expect(usCoreErrors(practitioner, `${PROFILES}/us-core-practitioner`)).toEqual([])
    }
  })
})

describe('the directory under SMART scopes', () => {
  it('lets a patient/ token read the practice’s Organization, Location and PractitionerRole', async () => {
    const practice = await newPractice(app)
    const scopes = ['patient/Organization.rs', 'patient/Location.rs', 'patient/PractitionerRole.rs']
    const token = smartToken(app, practice.org, practice.nurse, scopes, practice.patient.id)
    for (const path of [
      `/Organization/${practice.org.id}`,
      `/Location/${practice.org.id}`,
      `/PractitionerRole/${practice.provider.id}`,
    ]) {
      expect((await get(token, path)).statusCode, path).toBe(200)
    }
    const practitionersOnly = smartToken(app, practice.org, practice.nurse, ['patient/Practitioner.rs'])
    expect((await get(practitionersOnly, `/Organization/${practice.org.id}`)).statusCode).toBe(403)
  })

  it('lists read scopes of the new types in the SMART configuration, and no write scopes', async () => {
    const response = await app.inject({ url: '/fhir/R4/.well-known/smart-configuration' })
    const { scopes_supported } = response.json() as { scopes_supported: string[] }
    for (const type of ['Organization', 'Location', 'PractitionerRole']) {
      expect(scopes_supported).toEqual(expect.arrayContaining([`user/${type}.rs`, `patient/${type}.read`]))
      expect(scopes_supported).not.toContain(`user/${type}.cud`)
    }
  })
})
