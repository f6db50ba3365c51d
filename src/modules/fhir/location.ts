import type { Location } from '@medplum/fhirtypes'
import type { OrganizationRow } from '../../../db/tables/organizations.js'
import { practiceResourceType } from './organization.js'
import { claiming, contactsOf, recordResource, reference } from './resource-elements.js'
import type { FhirResourceType } from './resource-type.js'
import { stringParameter } from './search-conditions.js'
import { US_CORE_LOCATION } from './us-core-profiles.js'

/**
 * The practice as a US Core Location, under its Organization's id (`Location/7` is the place of
 * `Organization/7`): the service records no sites or rooms, so a practice is one place, named as
 * the practice is, at its address.
 */
function toFhirLocation(row: OrganizationRow): Location & { id: string } {
  return claiming(
    US_CORE_LOCATION,
    recordResource('Location', row, {
      status: 'active',
      name: row.name,
      ...contactsOf(row),
      managingOrganization: reference('Organization', row.id),
    }),
  )
}

/** Location: the practice's one place, read-only. */
export const locationResource = (): FhirResourceType<Location> =>
  practiceResourceType('Location', US_CORE_LOCATION, toFhirLocation, [
    stringParameter('address-city', 'Starts the city (case-insensitive)', ['address_city']),
    stringParameter('address-state', 'Starts the state (case-insensitive)', ['address_state']),
    stringParameter('address-postalcode', 'Starts the postal code (case-insensitive)', [
      'address_postal_code',
    ]),
  ])
