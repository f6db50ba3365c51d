import type { Bundle, CapabilityStatement, Resource } from '@medplum/fhirtypes'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Role } from '../../../src/access/roles.js'
import type { App } from '../../../src/app.js'
import { buildTestApp, openTestDatabase } from '../../helpers/app.js'
import { exported, exportedResources, local } from '../../helpers/bulk-export.js'
import { demoPractice } from '../../helpers/demo-practice.js'
import { expectFhir, fhirGet } from '../../helpers/fhir.js'
import { usCoreErrors } from '../../helpers/us-core.js'

// Every resource of a seeded practice, searched, read and exported, against the US Core 6.1.0
// profiles it claims, with the independent validator: 0 errors.

let app: App
let token: string
let statement: CapabilityStatement

const ROLES: Role[] = ['ADMIN', 'PROVIDER', 'NURSE', 'FRONT_DESK', 'BILLING']

beforeAll(async () => {
  // A database of its own: the demo practice fills the only organization of an empty database.
  app = await buildTestApp({}, undefined, { database: await openTestDatabase() })
  token = (await demoPractice(app, { patients: 12, roles: ROLES })).token
  statement = expectFhir(await app.inject({ url: '/fhir/R4/metadata' })) as CapabilityStatement
})
afterAll(async () => {
  await app.close()
})

const US_CORE = 'http://hl7.org/fhir/us/core/StructureDefinition/'
/** Types the seed leaves empty: it uploads no files (us-core-documents.test.ts checks documents). */
const NOT_SEEDED = ['DocumentReference']

/** Each failure of a resource against a US Core profile it claims, named `Type/id profile: error`. */
const failures = (resources: Resource[]) =>
  resources.flatMap((resource) =>
    (resource.meta?.profile ?? [])
      .filter((profile) => profile.startsWith(US_CORE))
      .flatMap((profile) =>
        usCoreErrors(resource, profile).map(
          (error) => `${resource.resourceType}/${resource.id} ${profile}: ${error}`,
        ),
      ),
  )

/** Every match of a search and the provenance of each, through its pages. */
async function searched(type: string): Promise<{ matches: Resource[]; provenances: Resource[] }> {
  const matches: Resource[] = []
  const provenances: Resource[] = []
  let path: string | undefined = `/${type}?_count=100&_revinclude=Provenance:target`
  for (let page = 0; path && page < 50; page++) {
    const response = await fhirGet(app, token, path)
    expect(response.statusCode, `${type}: ${response.body}`).toBe(200)
    const bundle = response.json() as Bundle
    for (const entry of bundle.entry ?? []) {
      if (entry.search?.mode === 'match') matches.push(entry.resource as Resource)
      else if (entry.resource?.resourceType === 'Provenance') provenances.push(entry.resource)
    }
    const next = bundle.link?.find((link) => link.relation === 'next')?.url
    path = next ? local(next).replace('/fhir/R4', '') : undefined
  }
  return { matches, provenances }
}

describe('the demo practice (npm run seed) as US Core 6.1.0', () => {
  it('searched and read: every resource meets the US Core profiles it claims, its provenance too', async () => {
    const types = (statement.rest?.[0]?.resource ?? []).filter(
      (resource) =>
        !['Group', 'Provenance', ...NOT_SEEDED].includes(resource.type) &&
        resource.interaction?.some((interaction) => interaction.code === 'search-type'),
    )
    let checked = 0
    for (const { type, supportedProfile = [] } of types) {
      const { matches, provenances } = await searched(type)
      expect(matches.length, type).toBeGreaterThan(0)
      expect(provenances).toHaveLength(matches.length)
      // A type listing US Core profiles claims one on each resource.
      const usCore = supportedProfile.filter((profile) => profile.startsWith(US_CORE))
      for (const resource of usCore.length > 0 ? matches : []) {
        const claimed = resource.meta?.profile ?? []
        expect(
          claimed.some((profile) => usCore.includes(profile)),
          `${type}/${resource.id}`,
        ).toBe(true)
      }
      expect(failures([...matches, ...provenances])).toEqual([])
      // A read answers what the search found.
      for (const resource of matches.slice(0, 3)) {
        const read = await fhirGet(app, token, `/${type}/${resource.id}`)
        expect(expectFhir(read), `${type}/${resource.id}`).toEqual(resource)
      }
      checked += matches.length
    }
    expect(checked).toBeGreaterThan(100)
  })

  it('exported: every line meets the US Core profiles it claims', async () => {
    const { manifest } = await exported(app, token, '/$export')
    expect(manifest.error).toEqual([])
    const byType = await exportedResources(app, token, manifest)
    const resources = [...byType.values()].flat()
    expect(resources.length).toBeGreaterThan(100)
    expect(failures(resources)).toEqual([])
  })
})
