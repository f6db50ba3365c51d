import type { Organization } from '@medplum/fhirtypes'
import type { Db } from '../../../db/database.js'
import type { OrganizationRow } from '../../../db/tables/organizations.js'
import { notFound } from '../../errors.js'
import { defineResourceType } from './resource-definition.js'
import { claiming, recordResource } from './resource-elements.js'
import type { FhirResourceType, ReadScope } from './resource-type.js'
import { stringParameter } from './search-conditions.js'
import { US_CORE_ORGANIZATION } from './us-core-profiles.js'

/**
 * The caller's own organization, the practice: the only one it sees. Another organization's id is
 * no record of it (404), not a record it is refused (403): which organizations exist is not told.
 */
export const practiceRows = (db: Db, scope: ReadScope) =>
  db.selectFrom('organizations').selectAll().where('id', '=', scope.actor.organizationId)

/** The caller's organization when `id` names it; 404 otherwise. */
export async function requirePractice(db: Db, scope: ReadScope, id: number, type: string) {
  const row = await practiceRows(db, scope).where('id', '=', id).executeTakeFirst()
  if (!row) throw notFound(`${type} ${id}`)
  return row
}

/**
 * An organization as a US Core Organization. The service keeps only its name: no NPI, telecom or
 * address (US Core must-supports it has no data for). An organization serves as long as it exists.
 */
function toFhirOrganization(row: OrganizationRow): Organization & { id: string } {
  return claiming(US_CORE_ORGANIZATION, recordResource('Organization', row, { active: true, name: row.name }))
}

/** Organization: the practice, read-only. */
export function organizationResource(): FhirResourceType<Organization> {
  return defineResourceType({
    type: 'Organization',
    profile: US_CORE_ORGANIZATION,
    // Directory data, as the practitioners are: the same roles read it, and a patient's own account.
    restRead: 'GET /api/providers/:id',
    restSearch: 'GET /api/providers',
    patientAccess: 'directory',
    records: practiceRows,
    columns: { id: 'id', updatedAt: 'updated_at' },
    searchParameters: [stringParameter('name', 'Starts the name (case-insensitive)', ['name'])],
    toFhir: toFhirOrganization,
    read: async (db, scope, id) => toFhirOrganization(await requirePractice(db, scope, id, 'Organization')),
  })
}
