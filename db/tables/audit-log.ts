import type { ColumnType, Generated, Insertable } from 'kysely'

export interface AuditLogTable {
  // bigint: a string from pg, a number from PGlite; mapped with Number() on the way out.
  id: ColumnType<number | string, never, never>
  occurred_at: Date
  /** When the row was written (records are written in batches, after the call). */
  recorded_at: Generated<Date>
  organization_id: number | null
  user_id: number | null
  action: string
  resource_type: string
  resource_ids: number[]
  /** The patient the call concerned, when its path, body or query named one. */
  patient_id: number | null
  outcome: string
  status_code: number
  request_id: string
}

export type NewAuditRow = Insertable<AuditLogTable>
