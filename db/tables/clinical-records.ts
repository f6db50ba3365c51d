import type { ColumnType, Generated, JSONColumnType, Selectable } from 'kysely'

/**
 * VITAL_SIGN: one measurement of a VITAL_SIGNS record (its panel), which the database writes with
 * the panel (migration 0035): served by FHIR only, as an Observation of its own.
 */
export type ClinicalKindName =
  | 'VITAL_SIGNS'
  | 'VITAL_SIGN'
  | 'LAB_RESULT'
  | 'CONDITION'
  | 'ALLERGY'
  | 'MEDICATION'
  /** A diagnosis of a signed encounter's note, written when it is signed (no REST routes of its own). */
  | 'ENCOUNTER_DIAGNOSIS'

export interface ClinicalRecordsTable {
  id: ColumnType<number, never, never>
  organization_id: number
  patient_id: number
  encounter_id: number | null
  kind: ClinicalKindName
  /** The kind's own status (e.g. ACTIVE, FINAL), or ENTERED_IN_ERROR. */
  status: string
  /** The code the kind is filtered by: LOINC, ICD-10-CM, RxNorm, or the allergy substance key. */
  code: string | null
  /** The clinical time the list is ordered by (measured, resulted, onset, started). */
  effective_at: Date
  data: JSONColumnType<Record<string, unknown>>
  version: Generated<number>
  recorded_by: number
  recorded_at: Generated<Date>
  updated_by: number
  created_at: Generated<Date>
  updated_at: Generated<Date>
  entered_in_error_at: Date | null
  entered_in_error_by: number | null
  entered_in_error_reason: string | null
  /** A VITAL_SIGNS record's members (VITAL_SIGN records) by LOINC code; kept by the database. */
  member_ids: ColumnType<Record<string, number> | null, never, never>
}

export type ClinicalRecordRow = Selectable<ClinicalRecordsTable>
