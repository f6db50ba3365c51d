import type { Generated } from 'kysely'

/**
 * Earlier versions of versioned records (migration 0027): a row is added, by a trigger, in the
 * transaction that replaces a version or removes the record, and never changed afterwards.
 */
export interface RecordHistoryTable {
  organization_id: number
  /** The record's table: `patients`, `appointments`, … */
  table_name: string
  record_id: number
  version: number
  /** The row as it was at that version, every column (read back with jsonb_populate_record). */
  row: unknown
  /** When the version stopped being current: replaced by the next, or the record removed. */
  ended_at: Generated<Date>
  /** The record was removed (deleted) at ended_at, and this was its last version. */
  removed: Generated<boolean>
}
