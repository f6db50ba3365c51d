import type { DeliveryRow } from '../../../db/tables/webhook-deliveries.js'
import type { DeliveryAttemptRow } from '../../../db/tables/webhook-delivery-attempts.js'
import type { WebhookRow } from '../../../db/tables/webhooks.js'
import type { StoredPayload } from '../../../schemas/events.js'
import type { Delivery, DeliveryDetail, Webhook } from '../../../schemas/webhooks.js'

const iso = (date: Date | null) => (date ? date.toISOString() : null)

/** The API's webhook from a row: never the secret. */
export function toWebhook(row: WebhookRow): Webhook {
  const overlapping = row.previous_secret_expires_at && row.previous_secret_expires_at > new Date()
  return {
    id: row.id,
    url: row.url,
    events: row.events as Webhook['events'],
    active: row.active,
    deactivatedAt: iso(row.deactivated_at),
    deactivationReason: row.deactivation_reason,
    failingSince: iso(row.failing_since),
    previousSecretExpiresAt: overlapping ? iso(row.previous_secret_expires_at) : null,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
    version: row.version,
  }
}

export function toDelivery(row: DeliveryRow): Delivery {
  return {
    id: row.id,
    webhookId: row.webhook_id,
    messageId: row.message_id,
    eventId: row.event_id,
    event: row.event_type,
    status: row.status,
    attemptCount: row.attempt_count,
    lastAttemptAt: iso(row.last_attempt_at),
    lastStatusCode: row.last_status_code,
    lastError: row.last_error,
    lastLatencyMs: row.last_latency_ms,
    nextAttemptAt: row.status === 'PENDING' ? row.next_attempt_at.toISOString() : null,
    completedAt: iso(row.completed_at),
    createdAt: row.created_at.toISOString(),
  }
}

export function toDeliveryDetail(
  row: DeliveryRow & { payload: StoredPayload },
  attempts: DeliveryAttemptRow[],
): DeliveryDetail {
  return {
    ...toDelivery(row),
    payload: { event: row.payload.event, timestamp: row.payload.timestamp, data: row.payload.data },
    attempts: attempts.map((attempt) => ({
      attemptedAt: attempt.attempted_at.toISOString(),
      statusCode: attempt.status_code,
      error: attempt.error,
      latencyMs: attempt.latency_ms,
    })),
  }
}
