import type { ColumnType, Generated, JSONColumnType, Selectable } from 'kysely'

export interface EncountersTable {
  id: ColumnType<number, never, never>
  organization_id: number
  patient_id: number
  provider_id: number
  appointment_id: number | null
  encounter_date: string
  encounter_type: string
  chief_complaint: string | null
  subjective: string | null
  objective: string | null
  assessment: string | null
  diagnoses: JSONColumnType<{ icd10Code: string; description: string }[]>
  plan: string | null
  status: Generated<string>
  signed_by: number | null
  signed_at: Date | null
  created_by: number | null
  updated_by: number | null
  created_at: Generated<Date>
  updated_at: Generated<Date>
  /** Incremented by the database on every change of the row. */
  version: Generated<number>
}

export type EncounterRow = Selectable<EncountersTable>
