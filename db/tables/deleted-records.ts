import type { Generated } from 'kysely'

/** Tombstones of removed records, kept for sync readers for a retention period. */
export interface DeletedRecordsTable {
  /** The resource's API name: `patient`, `document`, `webhook`. */
  resource_type: string
  record_id: number
  organization_id: number
  patient_id: number | null
  deleted_at: Generated<Date>
}
