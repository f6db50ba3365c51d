import type { CodeableConcept, Reference, Resource } from '@medplum/fhirtypes'
import { sql } from 'kysely'
import type { Db } from '../../../db/database.js'
import type { ClinicalKindName, ClinicalRecordRow } from '../../../db/tables/clinical-records.js'
import { missingRecord } from '../../access/organization-scope.js'
import type { ClinicalPath } from '../../access/route-access.js'
import { forbidden } from '../../errors.js'
import type { FhirResourceType, ReadScope, SearchParameterDefinition } from './resource-type.js'
import {
  countMatches,
  inCompartment,
  keysetPage,
  referenceParameter,
  type SearchColumns,
  sortParameters,
  tokenValues,
  whereCommon,
  whereReferences,
} from './search-conditions.js'
import type { SearchQuery } from './search-params.js'

const COLUMNS: SearchColumns = { id: 'id', updatedAt: 'updated_at' }

// Clinical records as FHIR resources: what Condition, AllergyIntolerance and MedicationStatement share.

/**
 * The organization's records of one kind, of its live patients (a deleted patient's records are
 * missing, as in the REST API), kept to the launch patient's for a `patient/` scope.
 */
const clinicalRowsOf = (db: Db, scope: ReadScope, kind: ClinicalKindName) => {
  const query = db
    .selectFrom('clinical_records')
    .selectAll()
    .where('organization_id', '=', scope.actor.organizationId)
    .where('kind', '=', kind)
    .where('patient_id', 'in', (eb) =>
      eb
        .selectFrom('patients')
        .select('id')
        .where('organization_id', '=', scope.actor.organizationId)
        .where('deleted_at', 'is', null),
    )
  return inCompartment(query, scope, 'patient_id')
}

export type ClinicalQuery = ReturnType<typeof clinicalRowsOf>

/** Whether the record was withdrawn (its status then says ENTERED_IN_ERROR, the old one is gone). */
export const withdrawn = (row: ClinicalRecordRow) =>
  row.entered_in_error_at !== null || row.status === 'ENTERED_IN_ERROR'

/** The service's coded values a token search names: `code` or `system|code` of the one system. */
export function ourCodes(values: string[], system: string, ours: Record<string, string>): string[] {
  return tokenValues(values, system)
    .map((code) => ours[code])
    .filter((code) => code !== undefined)
}

/** The fhir code → our value table of an our value → fhir code table. */
export const inverse = (table: Record<string, string>): Record<string, string> =>
  Object.fromEntries(Object.entries(table).map(([ours, code]) => [code, ours]))

export const coded = (system: string, code: string | undefined): CodeableConcept | undefined =>
  code === undefined ? undefined : { coding: [{ system, code }] }

export const nothing = sql<boolean>`false`

/** Where the record was recorded (an encounter of the same patient), if it says. */
export const encounterOf = (row: ClinicalRecordRow): Reference | undefined =>
  row.encounter_id === null ? undefined : { reference: `Encounter/${row.encounter_id}` }

export const metaOf = (row: ClinicalRecordRow) => ({
  versionId: String(row.version),
  lastUpdated: row.updated_at.toISOString(),
})

/** The search parameter every clinical type takes besides `_id` and `_lastUpdated`: `patient`. */
const PATIENT_PARAMETER: SearchParameterDefinition[] = [referenceParameter('patient', 'Patient')]

function commonFiltered(query: ClinicalQuery, search: SearchQuery): ClinicalQuery {
  let result = whereCommon(query, search, COLUMNS)
  result = whereReferences(result, search, 'patient', 'Patient', 'patient_id')
  return result
}

/** The organization of a record of the kind, whatever the caller's: only to tell 403 from 404. */
async function ownerOf(db: Db, kind: ClinicalKindName, id: number) {
  const row = await db
    .selectFrom('clinical_records')
    .select('organization_id')
    .where('id', '=', id)
    .where('kind', '=', kind)
    .where('patient_id', 'in', (eb) => eb.selectFrom('patients').select('id').where('deleted_at', 'is', null))
    .executeTakeFirst()
  return row?.organization_id
}

export interface ClinicalTypeDefinition<R extends Resource> {
  type: R['resourceType']
  kind: ClinicalKindName
  /** The REST path segment under /api/patients/:patientId/ (its routes' roles and audit apply). */
  path: ClinicalPath
  /** The type's own search parameters, beyond `_id`, `_lastUpdated` and `patient`. */
  searchParameters: SearchParameterDefinition[]
  toFhir(row: ClinicalRecordRow): R & { id: string }
  filtered(query: ClinicalQuery, search: SearchQuery): ClinicalQuery
  /** The patient reference the resource holds (subject or patient). */
  patientOf(resource: R): Reference | undefined
}

/**
 * A FHIR type over one kind of clinical record. Records are never deleted (a withdrawn one stays,
 * with an entered-in-error status), so there is no 410; searches return withdrawn records too,
 * as the REST sync pages do, so that a copy learns of the withdrawal.
 */
export function clinicalResourceType<R extends Resource>(
  definition: ClinicalTypeDefinition<R>,
): FhirResourceType<R> {
  const { type, kind, path, toFhir } = definition
  const matching = (db: Db, scope: ReadScope, query: SearchQuery) =>
    definition.filtered(commonFiltered(clinicalRowsOf(db, scope, kind), query), query)
  return {
    type,
    restRead: `GET /api/patients/:patientId/${path}/:id` as const,
    restSearch: `GET /api/patients/:patientId/${path}` as const,
    sortParameters: sortParameters(COLUMNS),
    searchParameters: [...PATIENT_PARAMETER, ...definition.searchParameters],
    includes: {
      patient: (resource) => {
        const reference = definition.patientOf(resource)?.reference
        return reference ? [reference] : []
      },
    },
    async read(db, scope, id) {
      const row = await clinicalRowsOf(db, { actor: scope.actor, patient: undefined }, kind)
        .where('id', '=', id)
        .executeTakeFirst()
      if (!row) missingRecord(type, id, await ownerOf(db, kind, id), scope.actor)
      if (scope.patient !== undefined && row.patient_id !== scope.patient) {
        throw forbidden('The token is limited to another patient’s records')
      }
      return toFhir(row)
    },
    search: (db, scope, query, page) => keysetPage(matching(db, scope, query), COLUMNS, page, toFhir),
    count: (db, scope, query) => countMatches(matching(db, scope, query)),
  }
}
