import type { Location, Organization } from '@medplum/fhirtypes'
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
const practiceRows = (db: Db, scope: ReadScope) =>
  db.selectFrom('organizations').selectAll().where('id', '=', scope.actor.organizationId)

/**
 * A read-only type whose one record is the caller's practice (Organization, Location): directory
 * data, read by the roles that read the practitioners, and by a patient's own account.
 */
export function practiceResourceType<R extends Organization | Location>(
  type: R['resourceType'],
  profile: string,
  toFhir: (row: OrganizationRow) => R & { id: string },
): FhirResourceType<R> {
  return defineResourceType({
    type,
    profile,
    restRead: 'GET /api/providers/:id',
    restSearch: 'GET /api/providers',
    patientAccess: 'directory',
    records: practiceRows,
    columns: { id: 'id', updatedAt: 'updated_at' },
    searchParameters: [stringParameter('name', 'Starts the name (case-insensitive)', ['name'])],
    toFhir,
    read: async (db, scope, id) => {
      const row = await practiceRows(db, scope).where('id', '=', id).executeTakeFirst()
      if (!row) throw notFound(`${type} ${id}`)
      return toFhir(row)
    },
  })
}

/**
 * An organization as a US Core Organization. The service keeps only its name: no NPI, telecom or
 * address (US Core must-supports it has no data for). An organization serves as long as it exists.
 */
function toFhirOrganization(row: OrganizationRow): Organization & { id: string } {
  return claiming(US_CORE_ORGANIZATION, recordResource('Organization', row, { active: true, name: row.name }))
}

/** Organization: the practice, read-only. */
export const organizationResource = (): FhirResourceType<Organization> =>
  practiceResourceType('Organization', US_CORE_ORGANIZATION, toFhirOrganization)
