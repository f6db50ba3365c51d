import type { Resource } from '@medplum/fhirtypes'
import { expect } from 'vitest'
import type { App } from '../../src/app.js'
import { bearer, type TestUser } from './factories.js'
import { fhirErrors } from './fhir-validator.js'

export interface Manifest {
  transactionTime: string
  request: string
  requiresAccessToken: boolean
  output: { type: string; url: string; count: number }[]
  error: { type: string; url: string; count: number }[]
}

export const ASYNC = { prefer: 'respond-async', accept: 'application/fhir+json' }

/** The path of an absolute FHIR URL, for `inject`. */
export const local = (url: string) => url.slice(url.indexOf('/fhir/R4'))

const tokenOf = (user: TestUser | string) => (typeof user === 'string' ? user : user.token)

export function kickOff(
  app: App,
  user: TestUser | string,
  path: string,
  headers: Record<string, string> = ASYNC,
) {
  return app.inject({ url: `/fhir/R4${path}`, headers: { ...bearer(tokenOf(user)), ...headers } })
}

/** Starts an export, runs it to its end, and returns its status URL and manifest. */
export async function exported(
  app: App,
  user: TestUser | string,
  path: string,
): Promise<{ status: string; manifest: Manifest }> {
  const started = await kickOff(app, user, path)
  expect(started.statusCode, started.body).toBe(202)
  const status = local(String(started.headers['content-location']))
  await app.bulkExports.drainOnce()
  const done = await app.inject({ url: status, headers: bearer(tokenOf(user)) })
  expect(done.statusCode, done.body).toBe(200)
  return { status, manifest: done.json() as Manifest }
}

/** The resources of one NDJSON file of an export. */
export async function fileLines(app: App, user: TestUser | string, url: string): Promise<Resource[]> {
  const response = await app.inject({ url: local(url), headers: bearer(tokenOf(user)) })
  expect(response.statusCode).toBe(200)
  expect(response.headers['content-type']).toMatch(/^application\/fhir\+ndjson/)
  return response.body
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as Resource)
}

/** Every resource of an export, by type, after checking each line validates against R4. */
export async function exportedResources(
  app: App,
  user: TestUser | string,
  manifest: Manifest,
): Promise<Map<string, Resource[]>> {
  const byType = new Map<string, Resource[]>()
  for (const file of manifest.output) {
    const resources = await fileLines(app, user, file.url)
    expect(resources).toHaveLength(file.count)
    for (const resource of resources) {
      expect(resource.resourceType).toBe(file.type)
      expect(fhirErrors(resource), `${resource.resourceType}/${resource.id}`).toEqual([])
    }
    byType.set(file.type, [...(byType.get(file.type) ?? []), ...resources])
  }
  return byType
}

/** The `Type/id` references a resource holds (contained ones, `#id`, excepted). */
export function referencesOf(value: unknown): string[] {
  if (Array.isArray(value)) return value.flatMap(referencesOf)
  if (value === null || typeof value !== 'object') return []
  return Object.entries(value).flatMap(([key, member]) =>
    key === 'reference' && typeof member === 'string' && !member.startsWith('#')
      ? [member]
      : referencesOf(member),
  )
}

/** The references of an export that name no resource of it. */
export function danglingReferences(byType: Map<string, Resource[]>): string[] {
  const all = [...byType.values()].flat()
  const present = new Set(all.map((resource) => `${resource.resourceType}/${resource.id}`))
  return all.flatMap(referencesOf).filter((reference) => !present.has(reference))
}

export const idsOf = (byType: Map<string, Resource[]>, type: string) =>
  (byType.get(type) ?? []).map((resource) => Number(resource.id)).sort((a, b) => a - b)
