import type { Location, Organization } from '@medplum/fhirtypes'
import type { Db } from '../../../db/database.js'
import type { OrganizationRow } from '../../../db/tables/organizations.js'
import { notFound } from '../../errors.js'
import { defineResourceType } from './resource-definition.js'
import { claiming, contactsOf, recordResource } from './resource-elements.js'
import type { FhirResourceType, ReadScope } from './resource-type.js'
import { type SearchParameter, stringParameter } from './search-conditions.js'
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
  extraSearchParameters: SearchParameter[] = [],
): FhirResourceType<R> {
  return defineResourceType({
    type,
    profile,
    restRead: 'GET /api/providers/:id',
    restSearch: 'GET /api/providers',
    patientAccess: 'directory',
    records: practiceRows,
    columns: { id: 'id', updatedAt: 'updated_at' },
    searchParameters: [
      stringParameter('name', 'Starts the name (case-insensitive)', ['name']),
      stringParameter(
        'address',
        'Starts a part of the address: street, city, state, postal code or country',
        ['address_street', 'address_city', 'address_state', 'address_postal_code', 'address_country'],
      ),
      ...extraSearchParameters,
    ],
    toFhir,
    read: async (db, scope, id) => {
      const row = await practiceRows(db, scope).where('id', '=', id).executeTakeFirst()
      if (!row) throw notFound(`${type} ${id}`)
      return toFhir(row)
    },
  })
}

const NPI_SYSTEM = 'http://hl7.org/fhir/sid/us-npi'

/** An organization as a US Core Organization: its name, NPI and contacts. */
function toFhirOrganization(row: OrganizationRow): Organization & { id: string } {
  const { telecom, address } = contactsOf(row)
  return claiming(
    US_CORE_ORGANIZATION,
    recordResource('Organization', row, {
      identifier: row.npi ? [{ system: NPI_SYSTEM, value: row.npi }] : undefined,
      active: true,
      name: row.name,
      telecom,
      address: address ? [address] : undefined,
    }),
  )
}

/** Organization: the practice, read-only. */
export const organizationResource = (): FhirResourceType<Organization> =>
  practiceResourceType('Organization', US_CORE_ORGANIZATION, toFhirOrganization)
