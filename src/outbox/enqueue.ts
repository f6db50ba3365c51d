import { type Compilable, type OperationNodeSource, type RawBuilder, sql } from 'kysely'
import type { Db } from '../../db/database.js'
import { prepared, returnsEveryColumn } from '../../db/prepared-statements.js'
import { type EmittedEvent, type EventData, TEST_EVENT } from '../../schemas/events.js'
import { ALL_EVENTS } from '../../schemas/webhooks.js'
import {
  type ChangeAudit,
  type ChangeAuditFields,
  changeAuditCte,
  currentChangeAudit,
} from '../audit/change-audit.js'
import { announceDeliveries, type EventHandle, type EventTrx } from './doorbell.js'

/**
 * The deliveries of the event row `inserted`: one for each active webhook of the organization that
 * subscribed to it, each returning its webhook, so that the writer can announce them once it has
 * committed (src/outbox/doorbell.ts): a worker whose queue for that webhook's receiver is already
 * full need not claim.
 */
function deliveriesOf(organizationId: number, event: EmittedEvent) {
  return sql`deliveries as (
      insert into webhook_deliveries (webhook_id, organization_id, event_id, event_type)
      select webhooks.id, ${organizationId}, inserted.id, ${event}
      from inserted, webhooks
      where webhooks.organization_id = ${organizationId}
        and webhooks.active
        and (${event} = any(webhooks.events) or ${ALL_EVENTS} = any(webhooks.events))
      returning webhook_id
    )`
}

/**
 * Records an event in the same transaction as the change that caused it, so the event exists
 * exactly when the change does, with its deliveries. The transaction is opened by
 * `transactionWithEvents`, which announces the deliveries once it commits.
 */
export async function enqueueEvent<E extends EmittedEvent>(
  trx: EventTrx,
  organizationId: number,
  event: E,
  data: EventData<E>,
): Promise<void> {
  const payload = { event, timestamp: new Date().toISOString(), data }
  const { rows } = await prepared(sql<{ webhook_id: number }>`
    with inserted as (
      insert into outbox_events (organization_id, event_type, payload)
      values (${organizationId}, ${event}, ${JSON.stringify(payload)}::jsonb)
      returning id
    ), ${deliveriesOf(organizationId, event)}
    select webhook_id from deliveries
  `).execute(trx)
  announceDeliveries(
    trx,
    rows.map((row) => row.webhook_id),
  )
}

/** The column in which a change-and-event statement returns the webhooks its deliveries are for. */
const DELIVERED_TO = 'outbox_delivered_to'
type WithDeliveries<R> = R & { [DELIVERED_TO]: number[] | null }

/**
 * The statement of `changeWithEvent`, with the event's `timestamp` given: a precompiled statement
 * (src/modules/patients/fast-path.ts) builds it once with placeholders for its values. Its rows go through
 * `changedRow`. With `audit`, the statement also writes the audit record of the call making the
 * change (src/audit/change-audit.ts).
 */
export function changeWithEventStatement<R, E extends EmittedEvent>(
  organizationId: number,
  event: E,
  change: Compilable<R> & OperationNodeSource,
  data: (changed: RawBuilder<unknown>) => RawBuilder<EventData<E>>,
  timestamp: string,
  audit?: ChangeAuditFields,
): RawBuilder<WithDeliveries<R>> {
  const payload = sql`jsonb_build_object(
    'event', ${event}::text, 'timestamp', ${timestamp}::text, 'data', ${data(sql.table('changed'))})`
  const statement = sql<WithDeliveries<R>>`
    with changed as (${change}),
    inserted as (
      insert into outbox_events (organization_id, event_type, payload)
      select ${organizationId}, ${event}, ${payload} from changed
      returning id
    ), ${deliveriesOf(organizationId, event)}${audit ? sql`, ${changeAuditCte(audit)}` : sql``}
    select changed.*, (select array_agg(webhook_id) from deliveries) as ${sql.id(DELIVERED_TO)} from changed
  `
  // A change returning every column would make `changed.*` change with the table.
  return returnsEveryColumn(change.toOperationNode()) ? statement : prepared(statement)
}

/**
 * The row a change-and-event statement changed, if any, once the deliveries it created are
 * announced; `audit`, when the statement wrote its record, is marked written.
 */
export function changedRow<R, D extends Db>(
  db: D & EventHandle<D>,
  rows: WithDeliveries<R>[],
  audit?: ChangeAudit,
): R | undefined {
  const row = rows[0]
  if (!row) return undefined
  const { [DELIVERED_TO]: webhookIds, ...changed } = row
  if (webhookIds) announceDeliveries<D>(db, webhookIds)
  if (audit) audit.writtenStatus = audit.fields.status_code
  return changed as R
}

/**
 * Makes a change and records its event in one statement, which is atomic by itself: no transaction
 * is needed for the pair (nor for the audit record of the call making it), and it costs one round
 * trip. `change` is an INSERT or UPDATE … RETURNING
 * of one row; `data` builds the event's data in SQL from that row (the table `changed`). Returns
 * the row, or undefined (and no event) when the change touched none.
 */
export async function changeWithEvent<R, E extends EmittedEvent, D extends Db>(
  db: D & EventHandle<D>,
  organizationId: number,
  event: E,
  change: Compilable<R> & OperationNodeSource,
  data: (changed: RawBuilder<unknown>) => RawBuilder<EventData<E>>,
): Promise<R | undefined> {
  const audit = currentChangeAudit()
  const timestamp = new Date().toISOString()
  const statement = changeWithEventStatement(organizationId, event, change, data, timestamp, audit?.fields)
  return changedRow<R, D>(db, (await statement.execute(db)).rows, audit)
}

/** A `webhook.test` event for one webhook only, at an administrator's request. */
export async function enqueueTestDelivery(
  trx: EventTrx,
  organizationId: number,
  webhookId: number,
): Promise<number> {
  const payload = {
    event: TEST_EVENT,
    timestamp: new Date().toISOString(),
    data: { webhookId, message: 'Test delivery requested by an administrator' },
  }
  const { rows } = await prepared(sql<{ id: number }>`
    with inserted as (
      insert into outbox_events (organization_id, event_type, payload)
      values (${organizationId}, ${TEST_EVENT}, ${JSON.stringify(payload)}::jsonb)
      returning id
    )
    insert into webhook_deliveries (webhook_id, organization_id, event_id, event_type)
    select ${webhookId}, ${organizationId}, inserted.id, ${TEST_EVENT} from inserted
    returning id
  `).execute(trx)
  announceDeliveries(trx, [webhookId])
  return (rows[0] as { id: number }).id
}
