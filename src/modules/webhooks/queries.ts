import { sql } from 'kysely'
import type { Db, Trx } from '../../../db/database.js'
import { leaseFree } from '../../../db/leases.js'
import type {
  DELIVERY_SORT_FIELDS,
  DeliveryListQuery,
  WEBHOOK_SORT_FIELDS,
  WebhookListQuery,
} from '../../../schemas/webhooks.js'
import { inOrganization, organizationRecords } from '../../lib/organization-records.js'
import type { ListFilters, SortColumns } from '../../lib/paging.js'
import { rowList } from '../../lib/row-list.js'

export const WEBHOOK_SORT_COLUMNS: SortColumns<typeof WEBHOOK_SORT_FIELDS> = {
  createdAt: 'created_at',
  url: 'url',
}

export const DELIVERY_SORT_COLUMNS: SortColumns<typeof DELIVERY_SORT_FIELDS> = {
  createdAt: 'created_at',
}

/** A webhook's deliveries and their attempts are deleted with it. */
export const webhookRecords = organizationRecords('webhooks')

/** The organization's webhooks matching the filters; sync pages carry tombstones of deleted ones. */
export function webhookRows(db: Db, organizationId: number, filters: ListFilters<WebhookListQuery>) {
  let query = inOrganization(db, organizationId).selectFrom('webhooks').selectAll()
  if (filters.active !== undefined) query = query.where('active', '=', filters.active)
  return rowList(db, query, { tombstones: { organizationId, resourceType: 'webhook' } })
}

const deliveriesOf = (db: Db, organizationId: number, webhookId: number) =>
  db
    .selectFrom('webhook_deliveries')
    .where('webhook_deliveries.organization_id', '=', organizationId)
    .where('webhook_deliveries.webhook_id', '=', webhookId)

/** A webhook's deliveries matching the filters; a sync page holds those claimed, attempted or redelivered since. */
export function deliveryRows(
  db: Db,
  organizationId: number,
  webhookId: number,
  filters: ListFilters<DeliveryListQuery>,
) {
  let query = deliveriesOf(db, organizationId, webhookId).selectAll()
  if (filters.status) query = query.where('status', '=', filters.status)
  if (filters.event) query = query.where('event_type', '=', filters.event)
  return rowList(db, query, {
    position: { time: 'webhook_deliveries.updated_at', id: 'webhook_deliveries.id' },
  })
}

export function findDelivery(db: Db, organizationId: number, webhookId: number, id: number) {
  return deliveriesOf(db, organizationId, webhookId)
    .innerJoin('outbox_events', 'outbox_events.id', 'webhook_deliveries.event_id')
    .selectAll('webhook_deliveries')
    .select('outbox_events.payload')
    .where('webhook_deliveries.id', '=', id)
    .executeTakeFirst()
}

/** A delivery's attempts, in the order they were made. */
export function listAttempts(db: Db, organizationId: number, deliveryId: number) {
  return inOrganization(db, organizationId)
    .selectFrom('webhook_delivery_attempts')
    .selectAll()
    .where('delivery_id', '=', deliveryId)
    .orderBy('attempted_at')
    .orderBy('id')
    .execute()
}

/**
 * Puts a delivery back in the queue as if new: due now, at the start of the retry schedule. A
 * delivery an instance is sending right now is left alone (undefined).
 */
export function requeueDelivery(trx: Trx, organizationId: number, webhookId: number, id: number) {
  return inOrganization(trx, organizationId)
    .updateTable('webhook_deliveries')
    .set({
      status: 'PENDING',
      retry_step: 0,
      next_attempt_at: sql`now()`,
      completed_at: null,
    })
    .where('webhook_id', '=', webhookId)
    .where('id', '=', id)
    .where(leaseFree('webhook_deliveries'))
    .returningAll()
    .executeTakeFirst()
}
