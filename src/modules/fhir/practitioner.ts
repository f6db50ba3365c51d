import type { ContactPoint, Practitioner } from '@medplum/fhirtypes'
import type { ExpressionBuilder } from 'kysely'
import type { Database, Db } from '../../../db/database.js'
import type { ProviderRow } from '../../../db/tables/providers.js'
import { requireProvider } from '../providers/service.js'
import type { FhirResourceType, ReadScope } from './resource-type.js'
import {
  countMatches,
  keysetPage,
  present,
  type SearchColumns,
  sortParameters,
  stringCondition,
  tokenValues,
  whereCommon,
  whereOneOf,
} from './search-conditions.js'
import { occurrences, type SearchQuery } from './search-params.js'

const COLUMNS: SearchColumns = { id: 'id', updatedAt: 'updated_at' }

/** The identifier system of US National Provider Identifiers. */
const NPI_SYSTEM = 'http://hl7.org/fhir/sid/us-npi'

/** A provider row as FHIR R4 Practitioner; empty parts are left out, as FHIR requires. */
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
  return present({
    resourceType: 'Practitioner' as const,
    id: String(row.id),
    meta: { versionId: String(row.version), lastUpdated: row.updated_at.toISOString() },
    identifier: [{ system: NPI_SYSTEM, value: row.npi }],
    active: row.active,
    name: [
      present({
        use: 'official' as const,
        family: row.last_name,
        given: [row.first_name],
        suffix: row.title ? [row.title] : undefined,
      }),
    ],
    telecom: telecom.length > 0 ? telecom : undefined,
    qualification: qualification.length > 0 ? qualification : undefined,
  }) as Practitioner & { id: string }
}

type ProviderQuery = ReturnType<typeof providersOf>

// Providers are not in a patient's compartment: a patient/ launch still reads the organization's
// practitioners (the ones its appointments and encounters name), so scope.patient is not applied.
const providersOf = (db: Db, scope: ReadScope) =>
  db.selectFrom('providers').selectAll().where('organization_id', '=', scope.actor.organizationId)

const lowered = (eb: ExpressionBuilder<Database, 'providers'>, column: 'first_name' | 'last_name') =>
  eb.fn<string | null>('lower', [eb.ref(column)])

function filtered(query: ProviderQuery, search: SearchQuery): ProviderQuery {
  let result = whereCommon(query, search, COLUMNS)
  for (const values of occurrences(search, 'identifier')) {
    const npis = tokenValues(values, NPI_SYSTEM)
    result = whereOneOf(result, 'npi', npis)
  }
  for (const values of occurrences(search, 'name')) {
    result = result.where((eb) =>
      eb.or(
        values.flatMap((value) =>
          (['first_name', 'last_name'] as const).map((column) =>
            stringCondition(eb, lowered(eb, column), value),
          ),
        ),
      ),
    )
  }
  return result
}

/** Practitioner: the organization's providers, active or not. */
export function practitionerResource(): FhirResourceType<Practitioner> {
  return {
    type: 'Practitioner',
    restRead: 'GET /api/providers/:id',
    restSearch: 'GET /api/providers',
    sortParameters: sortParameters(COLUMNS),
    searchParameters: [
      { name: 'identifier', type: 'token', documentation: `NPI, system ${NPI_SYSTEM}` },
      { name: 'name', type: 'string', documentation: 'Starts the given or family name (case-insensitive)' },
    ],
    async read(db, scope, id) {
      return toFhirPractitioner(await requireProvider(db, scope.actor, id))
    },
    search: (db, scope, query, page) =>
      keysetPage(filtered(providersOf(db, scope), query), COLUMNS, page, toFhirPractitioner),
    count: (db, scope, query) => countMatches(filtered(providersOf(db, scope), query)),
  }
}
