import type { ColumnType, Generated, Selectable } from 'kysely'

type DeliveryStatus = 'PENDING' | 'SUCCEEDED' | 'FAILED'

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
  /**
   * The lease: the worker holding the delivery (`locked_by`) until `locked_until`; after a crash it
   * simply lapses. Named before bulk exports' `lease_owner` and `lease_until`, and kept: a rename is
   * not additive, and instances of the two releases run side by side during a rolling deploy.
   */
  locked_by: string | null
  locked_until: Date | null
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
