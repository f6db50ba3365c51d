import type { ColumnType, Insertable } from 'kysely'

export interface AuditLogTable {
  id: ColumnType<number, never, never>
  occurred_at: Date
  organization_id: number | null
  user_id: number | null
  action: string
  resource_type: string
  resource_ids: number[]
  outcome: string
  status_code: number
  request_id: string
}

export type NewAuditRow = Insertable<AuditLogTable>
