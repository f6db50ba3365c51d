import type { Location } from '@medplum/fhirtypes'
import type { OrganizationRow } from '../../../db/tables/organizations.js'
import { practiceResourceType } from './organization.js'
import { claiming, recordResource, reference } from './resource-elements.js'
import type { FhirResourceType } from './resource-type.js'
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
export const locationResource = (): FhirResourceType<Location> =>
  practiceResourceType('Location', US_CORE_LOCATION, toFhirLocation)
