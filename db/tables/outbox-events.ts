import type { ColumnType, Generated, JSONColumnType } from 'kysely'

export interface OutboxEventsTable {
  id: ColumnType<number, never, never>
  organization_id: number
  event_type: string
  payload: JSONColumnType<{ event: string; timestamp: string; data: Record<string, unknown> }>
  created_at: Generated<Date>
  /** The writing transaction (xid8, as text): orders the change feed by visibility. */
  transaction_id: ColumnType<string, never, never>
}
