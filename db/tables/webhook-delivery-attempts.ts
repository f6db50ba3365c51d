import type { ColumnType, Selectable } from 'kysely'

export interface WebhookDeliveryAttemptsTable {
  id: ColumnType<number, never, never>
  organization_id: number
  delivery_id: number
  attempted_at: Date
  status_code: number | null
  error: string | null
  latency_ms: number
  /** Which service instance made the attempt. */
  instance_id: string
}

export type DeliveryAttemptRow = Selectable<WebhookDeliveryAttemptsTable>
