import type { ContactPoint, Practitioner } from '@medplum/fhirtypes'
import type { ProviderRow } from '../../../db/tables/providers.js'
import { requireProvider } from '../providers/service.js'
import { keptVersions } from './kept-versions.js'
import { practitionerWrites } from './practitioner-writes.js'
import { defineResourceType } from './resource-definition.js'
import { claiming, recordResource, withoutUndefined } from './resource-elements.js'
import type { FhirResourceType } from './resource-type.js'
import { stringParameter, tokenParameter } from './search-conditions.js'
import { US_CORE_PRACTITIONER } from './us-core-profiles.js'

/** The identifier system of US National Provider Identifiers. */
const NPI_SYSTEM = 'http://hl7.org/fhir/sid/us-npi'
/** The core extension of an IANA time zone: the provider's, in which their hours are kept. */
const TIME_ZONE_EXTENSION = 'http://hl7.org/fhir/StructureDefinition/timezone'

/** A provider row as a US Core Practitioner; empty parts are left out, as FHIR requires. */
function toFhirPractitioner(row: ProviderRow): Practitioner & { id: string } {
  const telecom: ContactPoint[] = [
    ...(row.email ? [{ system: 'email' as const, value: row.email, use: 'work' as const }] : []),
    ...(row.phone_number
      ? [{ system: 'phone' as const, value: row.phone_number, use: 'work' as const }]
      : []),
  ]
  // Practitioner has no specialty of its own (that is PractitionerRole's); credentials and specialty
  // are both training the provider holds, so both go to qualification, as text: they are free text here.
  const qualification = [row.title, row.specialty]
    .filter((text): text is string => Boolean(text))
    .map((text) => ({ code: { text } }))
  const practitioner = recordResource<Practitioner>('Practitioner', row, {
    extension: [{ url: TIME_ZONE_EXTENSION, valueCode: row.time_zone }],
    identifier: [{ system: NPI_SYSTEM, value: row.npi }],
    active: row.active,
    name: [
      withoutUndefined({
        use: 'official' as const,
        family: row.last_name,
        given: [row.first_name],
        suffix: row.title ? [row.title] : undefined,
      }),
    ],
    telecom: telecom.length > 0 ? telecom : undefined,
    qualification: qualification.length > 0 ? qualification : undefined,
  })
  return claiming(US_CORE_PRACTITIONER, practitioner)
}

/** Practitioner: the organization's providers, active or not. */
export function practitionerResource(): FhirResourceType<Practitioner> {
  return defineResourceType({
    type: 'Practitioner',
    profile: US_CORE_PRACTITIONER,
    restRead: 'GET /api/providers/:id',
    restSearch: 'GET /api/providers',
    records: (db, scope) =>
      db.selectFrom('providers').selectAll().where('organization_id', '=', scope.actor.organizationId),
    // Providers are not in a patient's compartment: a patient/ launch still reads the organization's
    // practitioners (the ones its appointments and encounters name), so no patient column.
    columns: { id: 'id', updatedAt: 'updated_at' },
    // A patient's own account reads the practice's directory too: the providers its appointments and
    // encounters name, and whom it might book; a provider's record says nothing about patients.
    patientAccess: 'directory',
    searchParameters: [
      tokenParameter('identifier', `NPI, system ${NPI_SYSTEM}`, 'npi', { system: NPI_SYSTEM }),
      stringParameter('name', 'Starts the given or family name (case-insensitive)', [
        'first_name',
        'last_name',
      ]),
    ],
    toFhir: toFhirPractitioner,
    versions: keptVersions('providers', toFhirPractitioner),
    writes: practitionerWrites(
      { npiSystem: NPI_SYSTEM, timeZoneExtension: TIME_ZONE_EXTENSION },
      toFhirPractitioner,
    ),
    read: async (db, scope, id) => toFhirPractitioner(await requireProvider(db, scope.actor, id)),
  })
}
