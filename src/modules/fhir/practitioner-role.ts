import type { ContactPoint, PractitionerRole } from '@medplum/fhirtypes'
import { sql } from 'kysely'
import type { ProviderRow } from '../../../db/tables/providers.js'
import { requireProvider } from '../providers/service.js'
import { keptVersions } from './kept-versions.js'
import { defineResourceType } from './resource-definition.js'
import { claiming, recordResource, reference, referencesTo } from './resource-elements.js'
import type { FhirResourceType } from './resource-type.js'
import { nothing, referenceParameter, type SearchParameter } from './search-conditions.js'
import { parseToken } from './search-params.js'
import { US_CORE_PRACTITIONER_ROLE } from './us-core-profiles.js'

/**
 * `specialty`: the specialty is free text here, not a code: a value without a system (or a bare
 * code) matches the whole text, case-insensitively; a value with a system matches nothing.
 */
const specialtyParameter: SearchParameter = {
  name: 'specialty',
  type: 'token',
  documentation:
    'The specialty, kept as free text (no NUCC codes): a value without a system matches the whole text, case-insensitively',
  where(query, values) {
    const texts = values
      .map(parseToken)
      .filter((token) => token.system === undefined && token.code !== undefined)
      .map((token) => (token.code as string).toLowerCase())
    if (texts.length === 0) return query.where(nothing)
    return query.where(sql`lower(specialty)`, 'in', texts)
  },
}

/**
 * A provider's role at the practice, under the provider's id (`PractitionerRole/12` is the role of
 * `Practitioner/12`): the practice as organization and place, the specialty as text, and the
 * provider's work email and phone. US Core requires contact information of a role: one whose
 * provider has neither claims no profile.
 */
function toFhirPractitionerRole(row: ProviderRow): PractitionerRole & { id: string } {
  const telecom: ContactPoint[] = [
    ...(row.email ? [{ system: 'email' as const, value: row.email, use: 'work' as const }] : []),
    ...(row.phone_number
      ? [{ system: 'phone' as const, value: row.phone_number, use: 'work' as const }]
      : []),
  ]
  const role = recordResource<PractitionerRole>('PractitionerRole', row, {
    active: row.active,
    practitioner: reference('Practitioner', row.id),
    organization: reference('Organization', row.organization_id),
    location: [reference('Location', row.organization_id)],
    specialty: row.specialty ? [{ text: row.specialty }] : undefined,
    telecom: telecom.length > 0 ? telecom : undefined,
  })
  return telecom.length > 0 ? claiming(US_CORE_PRACTITIONER_ROLE, role) : role
}

/** PractitionerRole: each provider's role at the practice, read-only (it changes with the provider). */
export function practitionerRoleResource(): FhirResourceType<PractitionerRole> {
  return defineResourceType({
    type: 'PractitionerRole',
    profile: US_CORE_PRACTITIONER_ROLE,
    restRead: 'GET /api/providers/:id',
    restSearch: 'GET /api/providers',
    // Directory data, as the practitioners are: a patient's own account reads it too.
    patientAccess: 'directory',
    records: (db, scope) =>
      db.selectFrom('providers').selectAll().where('organization_id', '=', scope.actor.organizationId),
    columns: { id: 'id', updatedAt: 'updated_at' },
    searchParameters: [referenceParameter('practitioner', 'Practitioner', 'id'), specialtyParameter],
    includes: {
      practitioner: (role) => referencesTo('Practitioner', [role.practitioner]),
      organization: (role) => referencesTo('Organization', [role.organization]),
      location: (role) => referencesTo('Location', role.location),
    },
    toFhir: toFhirPractitionerRole,
    versions: keptVersions('providers', toFhirPractitionerRole),
    read: async (db, scope, id) => toFhirPractitionerRole(await requireProvider(db, scope.actor, id)),
  })
}
