import type { ColumnType, Generated, Selectable } from 'kysely'

export type DeliveryStatus = 'PENDING' | 'SUCCEEDED' | 'FAILED'

/** One event for one webhook; its attempts are in webhook_delivery_attempts. */
export interface WebhookDeliveriesTable {
  id: ColumnType<number, never, never>
  /** The `webhook-id` header: the same on every attempt, so receivers can deduplicate. */
  message_id: Generated<string>
  webhook_id: number
  organization_id: number
  event_id: number
  event_type: string
  status: Generated<DeliveryStatus>
  attempt_count: Generated<number>
  /** Position in the retry schedule; a redelivery starts it again. */
  retry_step: Generated<number>
  next_attempt_at: Generated<Date>
  /** The worker holding the delivery until `lease_until`; after a crash the lease simply lapses. */
  lease_owner: string | null
  lease_until: Date | null
  last_attempt_at: Date | null
  last_status_code: number | null
  last_error: string | null
  last_latency_ms: number | null
  completed_at: Date | null
  created_at: Generated<Date>
  /** Set by the database on every change (claim, attempt, outcome, redelivery). */
  updated_at: Generated<Date>
}

export type DeliveryRow = Selectable<WebhookDeliveriesTable>
