import { type Compilable, type OperationNodeSource, type RawBuilder, sql } from 'kysely'
import type { Db, Trx } from '../../db/database.js'
import { type EmittedEvent, type EventData, TEST_EVENT } from '../../schemas/events.js'
import { ALL_EVENTS } from '../../schemas/webhooks.js'

export const OUTBOX_CHANNEL = 'outbox_events'

/**
 * The deliveries of the event row `inserted`: one for each active webhook of the organization that
 * subscribed to it. Each delivery sends a NOTIFY naming its webhook, which PostgreSQL folds into one
 * per webhook and transaction and sends on commit only: listeners wake when there is something to
 * deliver, and a worker whose queue for that webhook's receiver is already full need not claim.
 */
function deliveriesOf(organizationId: number, event: EmittedEvent) {
  return sql`deliveries as (
      insert into webhook_deliveries (webhook_id, organization_id, event_id, event_type)
      select webhooks.id, ${organizationId}, inserted.id, ${event}
      from inserted, webhooks
      where webhooks.organization_id = ${organizationId}
        and webhooks.active
        and (${event} = any(webhooks.events) or ${ALL_EVENTS} = any(webhooks.events))
      returning pg_notify(${OUTBOX_CHANNEL}, webhook_id::text)
    )`
}

/**
 * Records an event in the same transaction as the change that caused it, so the event exists
 * exactly when the change does, with its deliveries.
 */
export async function enqueueEvent<E extends EmittedEvent>(
  trx: Trx,
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
    ), ${deliveriesOf(organizationId, event)}
    select from inserted
  `.execute(trx)
}

/**
 * The statement of `changeWithEvent`, with the event's `timestamp` given: a precompiled statement
 * (db/precompiled-query.ts) builds it once with placeholders for its values.
 */
export function changeWithEventStatement<R, E extends EmittedEvent>(
  organizationId: number,
  event: E,
  change: Compilable<R> & OperationNodeSource,
  data: (changed: RawBuilder<unknown>) => RawBuilder<EventData<E>>,
  timestamp: string,
): RawBuilder<R> {
  const payload = sql`jsonb_build_object(
    'event', ${event}::text, 'timestamp', ${timestamp}::text, 'data', ${data(sql.table('changed'))})`
  return sql<R>`
    with changed as (${change}),
    inserted as (
      insert into outbox_events (organization_id, event_type, payload)
      select ${organizationId}, ${event}, ${payload} from changed
      returning id
    ), ${deliveriesOf(organizationId, event)}
    select * from changed
  `
}

/**
 * Makes a change and records its event in one statement, which is atomic by itself: no transaction
 * is needed for the pair, and it costs one round trip. `change` is an INSERT or UPDATE … RETURNING
 * of one row; `data` builds the event's data in SQL from that row (the table `changed`). Returns
 * the row, or undefined (and no event) when the change touched none.
 */
export async function changeWithEvent<R, E extends EmittedEvent>(
  db: Db,
  organizationId: number,
  event: E,
  change: Compilable<R> & OperationNodeSource,
  data: (changed: RawBuilder<unknown>) => RawBuilder<EventData<E>>,
): Promise<R | undefined> {
  const statement = changeWithEventStatement(organizationId, event, change, data, new Date().toISOString())
  const { rows } = await statement.execute(db)
  return rows[0]
}

/** A `webhook.test` event for one webhook only, at an administrator's request. */
export async function enqueueTestDelivery(
  trx: Trx,
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
    select delivery.id, pg_notify(${OUTBOX_CHANNEL}, ${webhookId}::text) from delivery
  `.execute(trx)
  return (rows[0] as { id: number }).id
}

/**
 * Wakes the workers on commit, for work that is due again without a new event (a redelivery); the
 * empty payload names no webhook, so every worker claims.
 */
export async function notifyWorkers(trx: Trx): Promise<void> {
  await sql`select pg_notify(${OUTBOX_CHANNEL}, '')`.execute(trx)
}
