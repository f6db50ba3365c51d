import type { CodeableConcept, Reference, Resource } from '@medplum/fhirtypes'
import type { Db } from '../../../db/database.js'
import type { ClinicalKindName, ClinicalRecordRow } from '../../../db/tables/clinical-records.js'
import { missingRecord } from '../../access/organization-scope.js'
import type { ClinicalPath } from '../../access/route-access.js'
import { keptVersions } from './kept-versions.js'
import { defineResourceType } from './resource-definition.js'
import { referencesTo } from './resource-elements.js'
import type { FhirResourceType, ReadScope } from './resource-type.js'
import type { ResourceWrites } from './resource-writes.js'
import { checkLaunchPatient } from './scopes.js'
import { referenceParameter, type SearchParameter } from './search-conditions.js'

// Clinical records as FHIR resources: what Condition, AllergyIntolerance and MedicationStatement share.

/**
 * The organization's records of the kinds, of its live patients (a deleted patient's records are
 * missing, as in the REST API).
 */
const clinicalRowsOf = (db: Db, scope: ReadScope, kinds: readonly ClinicalKindName[]) =>
  db
    .selectFrom('clinical_records')
    .selectAll()
    .where('organization_id', '=', scope.actor.organizationId)
    .where('kind', 'in', kinds)
    .where('patient_id', 'in', (eb) =>
      eb
        .selectFrom('patients')
        .select('id')
        .where('organization_id', '=', scope.actor.organizationId)
        .where('deleted_at', 'is', null),
    )

/** Whether the record was withdrawn (its status then says ENTERED_IN_ERROR, the old one is gone). */
export const withdrawn = (row: ClinicalRecordRow) =>
  row.entered_in_error_at !== null || row.status === 'ENTERED_IN_ERROR'

export const coded = (system: string, code: string | undefined): CodeableConcept | undefined =>
  code === undefined ? undefined : { coding: [{ system, code }] }

/**
 * The organization of a record of the kinds, whatever the caller's: only to tell 403 from 404. A
 * record of another kind is no record of the type (404).
 */
export async function clinicalRecordOwner(db: Db, kinds: readonly ClinicalKindName[], id: number) {
  const row = await db
    .selectFrom('clinical_records')
    .select('organization_id')
    .where('id', '=', id)
    .where('kind', 'in', kinds)
    .where('patient_id', 'in', (eb) => eb.selectFrom('patients').select('id').where('deleted_at', 'is', null))
    .executeTakeFirst()
  return row?.organization_id
}

export interface ClinicalTypeDefinition<R extends Resource> {
  type: R['resourceType']
  /** The profile its resources claim (toFhir claims it), or the profiles of its kinds. */
  profile?: string | readonly string[]
  /** Its records' kind; several when records of other kinds are also of the type (encounter diagnoses among Conditions). */
  kind: ClinicalKindName | readonly ClinicalKindName[]
  /** The REST path segment under /api/patients/:patientId/ (its routes' roles and audit apply). */
  path: ClinicalPath
  /** The type's own search parameters, beyond `_id`, `_lastUpdated` and `patient`. */
  searchParameters: SearchParameter<ReturnType<typeof clinicalRowsOf>>[]
  toFhir(row: ClinicalRecordRow): R & { id: string }
  /** The patient reference the resource holds (subject or patient). */
  patientOf(resource: R): Reference | undefined
  /** The references `_include` follows besides the patient's, by name. */
  includes?: FhirResourceType<R>['includes']
  /** Its writes, through the clinical service (clinical-writes.ts). */
  writes: ResourceWrites<R>
}

/**
 * A FHIR type over one kind of clinical record. Records are never deleted (a withdrawn one stays,
 * with an entered-in-error status), so there is no 410; searches return withdrawn records too,
 * as the REST sync pages do, so that a copy learns of the withdrawal.
 */
export function clinicalResourceType<R extends Resource>(
  definition: ClinicalTypeDefinition<R>,
): FhirResourceType<R> {
  const { type, profile, path, toFhir, writes } = definition
  const kinds = typeof definition.kind === 'string' ? [definition.kind] : definition.kind
  return defineResourceType({
    type,
    profile,
    writes,
    restRead: `GET /api/patients/:patientId/${path}/:id` as const,
    restSearch: `GET /api/patients/:patientId/${path}` as const,
    records: (db, scope) => clinicalRowsOf(db, scope, kinds),
    patientColumn: 'patient_id',
    columns: { id: 'id', updatedAt: 'updated_at' },
    searchParameters: [
      referenceParameter('patient', 'Patient', 'patient_id'),
      ...definition.searchParameters,
    ],
    includes: {
      patient: (resource) => referencesTo('Patient', [definition.patientOf(resource)]),
      ...definition.includes,
    },
    toFhir,
    versions: keptVersions('clinical_records', toFhir, {
      patientColumn: 'patient_id',
      shown: { kind: kinds },
    }),
    async read(db, scope, id) {
      const row = await clinicalRowsOf(db, scope, kinds).where('id', '=', id).executeTakeFirst()
      if (!row) missingRecord(type, id, await clinicalRecordOwner(db, kinds, id), scope.actor)
      checkLaunchPatient(scope, row.patient_id)
      return toFhir(row)
    },
  })
}
