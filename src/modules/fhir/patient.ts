import type { Patient } from '@medplum/fhirtypes'
import type { Db } from '../../../db/database.js'
import type { PatientRow } from '../../../db/tables/patients.js'
import { AppError, gone } from '../../errors.js'
import { requirePatient } from '../patients/service.js'
import { keptVersions } from './kept-versions.js'
import { demographicExtensions } from './patient-demographics.js'
import { patientWrites } from './patient-writes.js'
import { defineResourceType } from './resource-definition.js'
import { claiming, contactsOf, recordResource, withoutUndefined } from './resource-elements.js'
import type { FhirResourceType, ReadScope } from './resource-type.js'
import { checkLaunchPatient } from './scopes.js'
import { dateParameter, inverse, stringParameter, tokenParameter } from './search-conditions.js'
import { US_CORE_PATIENT } from './us-core-profiles.js'

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
const GENDER_OF_CODE = inverse(GENDERS)

/** A patient row as a US Core 6.1.0 Patient; empty parts are left out, as FHIR requires. */
function toFhirPatient(row: PatientRow, { mrnSystem }: PatientMapping): Patient & { id: string } {
  const { telecom, address } = contactsOf(row)
  const contact =
    row.emergency_contact_name && row.emergency_contact_phone
      ? [
          withoutUndefined({
            relationship: row.emergency_contact_relationship
              ? [{ text: row.emergency_contact_relationship }]
              : undefined,
            name: { text: row.emergency_contact_name },
            telecom: [{ system: 'phone' as const, value: row.emergency_contact_phone }],
          }),
        ]
      : undefined
  const patient = recordResource<Patient>('Patient', row, {
    extension: demographicExtensions(row),
    identifier: [
      {
        use: 'usual',
        type: { coding: [{ system: 'http://terminology.hl7.org/CodeSystem/v2-0203', code: 'MR' }] },
        system: mrnSystem,
        value: row.mrn,
      },
    ],
    active: row.status !== 'INACTIVE',
    name: [
      {
        use: 'official',
        family: row.last_name,
        given: [row.first_name, ...(row.middle_name ? [row.middle_name] : [])],
      },
    ],
    telecom,
    gender: GENDERS[row.gender] ?? 'unknown',
    birthDate: row.date_of_birth,
    deceasedBoolean: row.status === 'DECEASED' ? true : undefined,
    address: address ? [address] : undefined,
    contact,
    communication: row.preferred_language
      ? [{ language: { coding: [{ system: 'urn:ietf:bcp:47', code: row.preferred_language }] } }]
      : undefined,
  })
  return claiming(US_CORE_PATIENT, patient)
}

/** Patient: the practice's live patients. */
export function patientResource(mapping: PatientMapping): FhirResourceType<Patient> {
  return defineResourceType({
    type: 'Patient',
    profile: US_CORE_PATIENT,
    restRead: 'GET /api/patients/:id',
    restSearch: 'GET /api/patients',
    records: (db, scope) =>
      db
        .selectFrom('patients')
        .selectAll()
        .where('organization_id', '=', scope.actor.organizationId)
        .where('deleted_at', 'is', null),
    patientColumn: 'id',
    columns: { id: 'id', updatedAt: 'updated_at', sortDates: { birthdate: 'date_of_birth' } },
    searchParameters: [
      tokenParameter('identifier', `MRN, system ${mapping.mrnSystem}`, 'mrn', { system: mapping.mrnSystem }),
      stringParameter('name', 'Starts a given or family name (case-insensitive)', [
        'first_name',
        'middle_name',
        'last_name',
      ]),
      stringParameter('family', 'Starts the family name', ['last_name']),
      stringParameter('given', 'Starts a given name', ['first_name', 'middle_name']),
      dateParameter('birthdate', 'Date of birth', 'date_of_birth', 'date'),
      tokenParameter('gender', 'male | female | other | unknown', 'gender', { ours: GENDER_OF_CODE }),
    ],
    toFhir: (row) => toFhirPatient(row, mapping),
    versions: keptVersions('patients', (row) => toFhirPatient(row, mapping), {
      patientColumn: 'id',
      deleted: (row) => row.deleted_at !== null,
    }),
    writes: patientWrites(mapping.mrnSystem, (row) => toFhirPatient(row, mapping)),
    async read(db, scope, id) {
      checkLaunchPatient(scope, id)
      try {
        return toFhirPatient(await requirePatient(db, scope.actor, id), mapping)
      } catch (error) {
        if (error instanceof AppError && error.code === 'RES_001' && (await wasRemoved(db, scope, id))) {
          throw gone(`Patient ${id} was deleted`)
        }
        throw error
      }
    },
  })
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
