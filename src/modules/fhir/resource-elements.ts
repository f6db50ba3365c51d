import type { Address, ContactPoint, Meta, Reference, Resource } from '@medplum/fhirtypes'

/** The object without its undefined members: absent parts are left out. */
export function withoutUndefined<T extends object>(value: T): T {
  // A loop over the keys, several times faster than entries, filter and fromEntries: every
  // resource read or written comes through here.
  const defined: Record<string, unknown> = {}
  for (const name of Object.keys(value)) {
    const member = (value as Record<string, unknown>)[name]
    if (member !== undefined) defined[name] = member
  }
  return defined as T
}

/**
 * The object without its undefined members, or undefined when none is left: FHIR forbids empty
 * objects and arrays, so absent parts are left out rather than sent empty.
 */
export function present<T extends object>(value: T): T | undefined {
  const defined = withoutUndefined(value)
  return Object.keys(defined).length > 0 ? defined : undefined
}

/** A resource's version and change time: those of its record. */
export const metaOf = (row: { version: number; updated_at: Date }): Meta => ({
  versionId: String(row.version),
  lastUpdated: row.updated_at.toISOString(),
})

/** The resource claiming a profile (FhirResourceType.profile) in its meta. */
export const claiming = <R extends Resource>(profile: string, resource: R): R => ({
  ...resource,
  meta: { ...resource.meta, profile: [profile] },
})

/** The types a mapped resource references. */
export type Referenced =
  | 'Patient'
  | 'Practitioner'
  | 'Encounter'
  | 'Appointment'
  | 'Organization'
  | 'Location'
  | 'Observation'
type ResourceOfType<T extends Referenced> = Extract<Resource, { resourceType: T }>

/** A reference to the record `id` of a type (`Patient/12`); none where the record names none. */
export function reference<T extends Referenced>(type: T, id: number): Reference<ResourceOfType<T>>
export function reference<T extends Referenced>(
  type: T,
  id: number | null,
): Reference<ResourceOfType<T>> | undefined
export function reference<T extends Referenced>(
  type: T,
  id: number | null,
): Reference<ResourceOfType<T>> | undefined {
  return id === null ? undefined : { reference: `${type}/${id}` }
}

/** The references to records of `type` among a resource's, as `_include` follows them. */
export const referencesTo = (type: Referenced, references: (Reference | undefined)[] = []): string[] =>
  references
    .map((candidate) => candidate?.reference)
    .filter((text): text is string => text?.startsWith(`${type}/`) === true)

/**
 * The resource a record maps to: its type, the record's id and version, then its own elements,
 * absent ones left out.
 */
export function recordResource<R extends Resource>(
  resourceType: R['resourceType'],
  row: { id: number; version: number; updated_at: Date },
  elements: Omit<R, 'resourceType' | 'id' | 'meta'>,
): R & { id: string } {
  const resource = { resourceType, id: String(row.id), meta: metaOf(row), ...elements }
  return withoutUndefined(resource) as R & { id: string }
}

/** The columns of a record's e-mail, phone and postal address (a patient's, the practice's). */
interface ContactColumns {
  email: string | null
  phone_number: string | null
  address_street: string | null
  address_city: string | null
  address_state: string | null
  address_postal_code: string | null
  address_country: string | null
}

/** A record's e-mail and phone as `telecom`, its address as one `address`; none where nothing is recorded. */
export function contactsOf(row: ContactColumns): { telecom?: ContactPoint[]; address?: Address } {
  const telecom: ContactPoint[] = [
    ...(row.email ? [{ system: 'email' as const, value: row.email }] : []),
    ...(row.phone_number ? [{ system: 'phone' as const, value: row.phone_number }] : []),
  ]
  const address = present({
    line: row.address_street ? [row.address_street] : undefined,
    city: row.address_city ?? undefined,
    state: row.address_state ?? undefined,
    postalCode: row.address_postal_code ?? undefined,
    country: row.address_country ?? undefined,
  })
  return withoutUndefined({ telecom: telecom.length > 0 ? telecom : undefined, address })
}
