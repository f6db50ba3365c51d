import type { Bundle, Resource } from '@medplum/fhirtypes'
import { expect } from 'vitest'
import type { App } from '../../src/app.js'
import { bearer, type TestOrganization, type TestUser, tokenFor } from './factories.js'
import { fhirErrors } from './fhir-validator.js'

/** A GET under /fhir/R4 as `user` (or with a bare token). */
export const fhirGet = (
  app: App,
  user: TestUser | string,
  path: string,
  headers: Record<string, string> = {},
) =>
  app.inject({
    url: `/fhir/R4${path}`,
    headers: { ...bearer(typeof user === 'string' ? user : user.token), ...headers },
  })

/** The answer's resource, after checking it is FHIR JSON that validates against the R4 definitions. */
export function expectFhir(response: { headers: Record<string, unknown>; json(): unknown }): Resource {
  expect(String(response.headers['content-type'])).toMatch(/^application\/fhir\+json/)
  const resource = response.json() as Resource
  expect(fhirErrors(resource)).toEqual([])
  return resource
}

/** The ids of a search Bundle's matches, in order. */
export const matchIds = (bundle: Bundle) =>
  (bundle.entry ?? [])
    .filter((entry) => entry.search?.mode === 'match')
    .map((entry) => Number(entry.resource?.id))

/** A token of `user` carrying SMART scopes and, for patient/ scopes, a launch patient. */
export function smartToken(
  app: App,
  org: TestOrganization,
  user: TestUser,
  scopes: string[],
  patient?: number,
): string {
  return tokenFor(
    app,
    { subject: user.subject, email: user.email, roles: user.roles, groupPath: org.groupPath },
    undefined,
    { scopes, patient: patient === undefined ? undefined : String(patient) },
  )
}
