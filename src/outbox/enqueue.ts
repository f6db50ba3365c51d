import { sql, type Transaction } from 'kysely'
import type { Database } from '../../db/database.js'
import { type EmittedEvent, type EventData, TEST_EVENT } from '../../schemas/events.js'
import { ALL_EVENTS } from '../../schemas/webhooks.js'

export const OUTBOX_CHANNEL = 'outbox_events'

/**
 * Records an event in the same transaction as the change that caused it, so the event exists
 * exactly when the change does, together with one delivery for each active webhook of the
 * organization that subscribed to it. The NOTIFY is transactional too: listeners hear it on commit
 * only, and only when there is something to deliver.
 */
export async function enqueueEvent<E extends EmittedEvent>(
  trx: Transaction<Database>,
  organizationId: number,
  event: E,
  data: EventData<E>,
): Promise<void> {
  const payload = { event, timestamp: new Date().toISOString(), data }
  await sql`
    with inserted as (
      insert into outbox_events (organization_id, event_type, payload)
      values (${organizationId}, ${event}, ${JSON.stringify(payload)}::jsonb)
      returning id
    ), deliveries as (
      insert into webhook_deliveries (webhook_id, organization_id, event_id, event_type)
      select webhooks.id, ${organizationId}, inserted.id, ${event}
      from inserted, webhooks
      where webhooks.organization_id = ${organizationId}
        and webhooks.active
        and (${event} = any(webhooks.events) or ${ALL_EVENTS} = any(webhooks.events))
      returning 1
    )
    select pg_notify(${OUTBOX_CHANNEL}, id::text) from inserted where exists (select from deliveries)
  `.execute(trx)
}

/** A `webhook.test` event for one webhook only, at an administrator's request. */
export async function enqueueTestDelivery(
  trx: Transaction<Database>,
  organizationId: number,
  webhookId: number,
): Promise<number> {
  const payload = {
    event: TEST_EVENT,
    timestamp: new Date().toISOString(),
    data: { webhookId, message: 'Test delivery requested by an administrator' },
  }
  const { rows } = await sql<{ id: number }>`
    with inserted as (
      insert into outbox_events (organization_id, event_type, payload)
      values (${organizationId}, ${TEST_EVENT}, ${JSON.stringify(payload)}::jsonb)
      returning id
    ), delivery as (
      insert into webhook_deliveries (webhook_id, organization_id, event_id, event_type)
      select ${webhookId}, ${organizationId}, inserted.id, ${TEST_EVENT} from inserted
      returning id
    )
    select delivery.id, pg_notify(${OUTBOX_CHANNEL}, inserted.id::text) from delivery, inserted
  `.execute(trx)
  return (rows[0] as { id: number }).id
}

/** Wakes the workers on commit, for work that is due again without a new event (a redelivery). */
export async function notifyWorkers(trx: Transaction<Database>): Promise<void> {
  await sql`select pg_notify(${OUTBOX_CHANNEL}, '')`.execute(trx)
}
