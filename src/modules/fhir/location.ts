import type { Location } from '@medplum/fhirtypes'
import type { OrganizationRow } from '../../../db/tables/organizations.js'
import { practiceRows, requirePractice } from './organization.js'
import { defineResourceType } from './resource-definition.js'
import { claiming, recordResource, reference } from './resource-elements.js'
import type { FhirResourceType } from './resource-type.js'
import { stringParameter } from './search-conditions.js'
import { US_CORE_LOCATION } from './us-core-profiles.js'

/**
 * The practice as a US Core Location, under its Organization's id (`Location/7` is the place of
 * `Organization/7`): the service records no sites or rooms, so a practice is one place, named as
 * the practice is. It keeps no address or telecom of it either.
 */
function toFhirLocation(row: OrganizationRow): Location & { id: string } {
  return claiming(
    US_CORE_LOCATION,
    recordResource('Location', row, {
      status: 'active',
      name: row.name,
      managingOrganization: reference('Organization', row.id),
    }),
  )
}

/** Location: the practice's one place, read-only. */
export function locationResource(): FhirResourceType<Location> {
  return defineResourceType({
    type: 'Location',
    profile: US_CORE_LOCATION,
    // Directory data, as the practitioners are: the same roles read it, and a patient's own account.
    restRead: 'GET /api/providers/:id',
    restSearch: 'GET /api/providers',
    patientAccess: 'directory',
    records: practiceRows,
    columns: { id: 'id', updatedAt: 'updated_at' },
    searchParameters: [stringParameter('name', 'Starts the name (case-insensitive)', ['name'])],
    toFhir: toFhirLocation,
    read: async (db, scope, id) => toFhirLocation(await requirePractice(db, scope, id, 'Location')),
  })
}
