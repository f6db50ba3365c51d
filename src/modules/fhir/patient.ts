import type { ContactPoint, Patient } from '@medplum/fhirtypes'
import type { ExpressionBuilder } from 'kysely'
import type { Database, Db } from '../../../db/database.js'
import type { PatientRow } from '../../../db/tables/patients.js'
import { AppError } from '../../errors.js'
import { requirePatient } from '../patients/service.js'
import type { FhirResourceType, ReadScope } from './resource-type.js'
import {
  countMatches,
  dateCondition,
  inCompartment,
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

const COLUMNS: SearchColumns = {
  id: 'id',
  updatedAt: 'updated_at',
  sortDates: { birthdate: 'date_of_birth' },
}

/** The identifier system of MRNs; a practice sets its own with FHIR_MRN_SYSTEM. */
export interface PatientMapping {
  mrnSystem: string
}

const GENDERS: Record<string, NonNullable<Patient['gender']>> = {
  Male: 'male',
  Female: 'female',
  Other: 'other',
  Unknown: 'unknown',
}
const GENDER_OF_CODE = Object.fromEntries(Object.entries(GENDERS).map(([ours, code]) => [code, ours]))

/** A patient row as FHIR R4 (US Core) Patient; empty parts are left out, as FHIR requires. */
function toFhirPatient(row: PatientRow, { mrnSystem }: PatientMapping): Patient & { id: string } {
  const telecom: ContactPoint[] = [
    ...(row.email ? [{ system: 'email' as const, value: row.email }] : []),
    ...(row.phone_number ? [{ system: 'phone' as const, value: row.phone_number }] : []),
  ]
  const line = row.address_street ? [row.address_street] : undefined
  const address = present({
    line,
    city: row.address_city ?? undefined,
    state: row.address_state ?? undefined,
    postalCode: row.address_postal_code ?? undefined,
    country: row.address_country ?? undefined,
  })
  const contact =
    row.emergency_contact_name && row.emergency_contact_phone
      ? [
          present({
            relationship: row.emergency_contact_relationship
              ? [{ text: row.emergency_contact_relationship }]
              : undefined,
            name: { text: row.emergency_contact_name },
            telecom: [{ system: 'phone' as const, value: row.emergency_contact_phone }],
          }),
        ]
      : undefined
  return present({
    resourceType: 'Patient' as const,
    id: String(row.id),
    meta: { versionId: String(row.version), lastUpdated: row.updated_at.toISOString() },
    identifier: [
      {
        use: 'usual' as const,
        type: { coding: [{ system: 'http://terminology.hl7.org/CodeSystem/v2-0203', code: 'MR' }] },
        system: mrnSystem,
        value: row.mrn,
      },
    ],
    active: row.status !== 'INACTIVE',
    name: [
      {
        use: 'official' as const,
        family: row.last_name,
        given: [row.first_name, ...(row.middle_name ? [row.middle_name] : [])],
      },
    ],
    telecom: telecom.length > 0 ? telecom : undefined,
    gender: GENDERS[row.gender] ?? 'unknown',
    birthDate: row.date_of_birth,
    deceasedBoolean: row.status === 'DECEASED' ? true : undefined,
    address: address ? [address] : undefined,
    contact,
    communication: row.preferred_language
      ? [{ language: { coding: [{ system: 'urn:ietf:bcp:47', code: row.preferred_language }] } }]
      : undefined,
  }) as Patient & { id: string }
}

type PatientQuery = ReturnType<typeof patientsOf>

const patientsOf = (db: Db, scope: ReadScope) => {
  const query = db
    .selectFrom('patients')
    .selectAll()
    .where('organization_id', '=', scope.actor.organizationId)
    .where('deleted_at', 'is', null)
  return inCompartment(query, scope, 'id')
}

const nameWord = (
  eb: ExpressionBuilder<Database, 'patients'>,
  column: 'first_name' | 'middle_name' | 'last_name',
) => eb.fn<string | null>('lower', [eb.ref(column)])

function filtered(query: PatientQuery, search: SearchQuery, { mrnSystem }: PatientMapping): PatientQuery {
  let result = whereCommon(query, search, COLUMNS)
  for (const values of occurrences(search, 'identifier')) {
    const mrns = tokenValues(values, mrnSystem)
    result = whereOneOf(result, 'mrn', mrns)
  }
  for (const values of occurrences(search, 'gender')) {
    const genders = values.map((code) => GENDER_OF_CODE[code]).filter((gender) => gender !== undefined)
    result = whereOneOf(result, 'gender', genders)
  }
  for (const values of occurrences(search, 'family')) {
    result = result.where((eb) =>
      eb.or(values.map((value) => stringCondition(eb, nameWord(eb, 'last_name'), value))),
    )
  }
  for (const values of occurrences(search, 'given')) {
    result = result.where((eb) =>
      eb.or(
        values.flatMap((value) => [
          stringCondition(eb, nameWord(eb, 'first_name'), value),
          stringCondition(eb, nameWord(eb, 'middle_name'), value),
        ]),
      ),
    )
  }
  for (const values of occurrences(search, 'name')) {
    result = result.where((eb) =>
      eb.or(
        values.flatMap((value) =>
          (['first_name', 'middle_name', 'last_name'] as const).map((column) =>
            stringCondition(eb, nameWord(eb, column), value),
          ),
        ),
      ),
    )
  }
  for (const values of occurrences(search, 'birthdate')) {
    result = result.where((eb) =>
      eb.or(values.map((value) => dateCondition(eb, 'date_of_birth', value, 'date'))),
    )
  }
  return result
}

/** Patient: the practice's live patients. */
export function patientResource(mapping: PatientMapping): FhirResourceType<Patient> {
  return {
    type: 'Patient',
    restRead: 'GET /api/patients/:id',
    restSearch: 'GET /api/patients',
    sortParameters: sortParameters(COLUMNS),
    searchParameters: [
      { name: 'identifier', type: 'token', documentation: `MRN, system ${mapping.mrnSystem}` },
      { name: 'name', type: 'string', documentation: 'Starts a given or family name (case-insensitive)' },
      { name: 'family', type: 'string', documentation: 'Starts the family name' },
      { name: 'given', type: 'string', documentation: 'Starts a given name' },
      { name: 'birthdate', type: 'date', documentation: 'Date of birth (prefixes eq, ne, gt, lt, ge, le)' },
      { name: 'gender', type: 'token', documentation: 'male | female | other | unknown' },
    ],
    async read(db, scope, id) {
      if (scope.patient !== undefined && scope.patient !== id) {
        throw new AppError('AUTH_003', 'The token is limited to another patient’s records')
      }
      try {
        return toFhirPatient(await requirePatient(db, scope.actor, id), mapping)
      } catch (error) {
        if (error instanceof AppError && error.code === 'RES_001' && (await wasRemoved(db, scope, id))) {
          throw new AppError('RES_001', `Patient ${id} was deleted`, { status: 410, message: 'Gone' })
        }
        throw error
      }
    },
    search: (db, scope, query, page) =>
      keysetPage(filtered(patientsOf(db, scope), query, mapping), COLUMNS, page, (row) =>
        toFhirPatient(row, mapping),
      ),
    count: (db, scope, query) => countMatches(filtered(patientsOf(db, scope), query, mapping)),
  }
}

async function wasRemoved(db: Db, scope: ReadScope, id: number): Promise<boolean> {
  const row = await db
    .selectFrom('patients')
    .select('id')
    .where('organization_id', '=', scope.actor.organizationId)
    .where('id', '=', id)
    .where('deleted_at', 'is not', null)
    .executeTakeFirst()
  return row !== undefined
}
