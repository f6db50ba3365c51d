import type { Db, Trx } from '../../../db/database.js'
import {
  ALL_EVENTS,
  type CreateWebhookBody,
  type Delivery,
  type DeliveryDetail,
  type DeliveryListQuery,
  type PatchWebhookBody,
  type RotateSecretBody,
  UpdateWebhookBody,
  type Webhook,
  type WebhookListQuery,
  type WebhookWithSecret,
} from '../../../schemas/webhooks.js'
import { type Actor, missingRecord, ownerOrganization } from '../../access/organization-scope.js'
import { auditChange } from '../../audit/change-audit.js'
import { AppError, invalidField, notFound } from '../../errors.js'
import { patchRecord, projectOnto } from '../../lib/merge-patch.js'
import { sortOrder, splitListQuery } from '../../lib/paging.js'
import { type RecordList, recordList } from '../../lib/row-list.js'
import type { SecretBox } from '../../lib/secret-box.js'
import { atExpectedVersion, type ExpectedVersion } from '../../lib/versions.js'
import { announceDeliveries, transactionWithEvents } from '../../outbox/doorbell.js'
import { enqueueTestDelivery } from '../../outbox/enqueue.js'
import { checkTarget, type TargetPolicy, TargetRefused } from '../../outbox/targets.js'
import { generateSecret, sealSigningKey, signingKeyOf } from '../../outbox/webhook-secrets.js'
import { toDelivery, toDeliveryDetail, toWebhook } from './mapper.js'
import {
  DELIVERY_SORT_COLUMNS,
  deliveryRows,
  findDelivery,
  listAttempts,
  requeueDelivery,
  WEBHOOK_SORT_COLUMNS,
  webhookRecords,
  webhookRows,
} from './queries.js'

/** What registration needs besides the database: the address rules, encryption, rotation overlap. */
export interface WebhookSettings {
  targets: TargetPolicy
  secretBox: SecretBox
  secretOverlapSeconds: number
}

/** The spec's organization rule: a webhook of another organization is 403, a missing one 404. */
async function missingWebhook(db: Db, actor: Actor, id: number): Promise<never> {
  return missingRecord('Webhook', id, await ownerOrganization(db, 'webhooks', id), actor)
}

/** The webhook locked for a change, at the version `If-Match` names if it names one. */
async function lockWebhookAt(trx: Trx, actor: Actor, id: number, expectedVersion: ExpectedVersion) {
  const locked = await webhookRecords.lock(trx, actor.organizationId, id)
  return atExpectedVersion(locked, expectedVersion, () => missingWebhook(trx, actor, id))
}

async function checkUrl(url: string, targets: TargetPolicy): Promise<void> {
  try {
    await checkTarget(url, targets)
  } catch (error) {
    if (error instanceof TargetRefused) throw invalidField('url', error.problem)
    throw error
  }
}

/** `*` covers every event, so nothing else needs listing beside it. */
const normalizeEvents = (events: CreateWebhookBody['events']) =>
  events.includes(ALL_EVENTS) ? [ALL_EVENTS] : [...events]

/** The caller's secret, or a generated one (returned once); sealed for storage either way. */
function newSecret(settings: WebhookSettings, actor: Actor, chosen: string | undefined) {
  const secret = chosen ?? generateSecret()
  return {
    sealed: sealSigningKey(settings.secretBox, actor.organizationId, signingKeyOf(secret)),
    generated: chosen === undefined ? secret : null,
  }
}

const inactive = () =>
  new AppError('RES_002', 'The webhook is inactive; activate it first', {
    message: 'Webhook inactive',
  })

export async function createWebhook(
  db: Db,
  settings: WebhookSettings,
  actor: Actor,
  body: CreateWebhookBody,
): Promise<WebhookWithSecret> {
  await checkUrl(body.url, settings.targets)
  const secret = newSecret(settings, actor, body.secret)
  return db.transaction().execute(async (trx) => {
    const row = await webhookRecords.insert(trx, {
      organization_id: actor.organizationId,
      url: body.url,
      events: normalizeEvents(body.events),
      secret: secret.sealed,
      previous_secret: null,
      previous_secret_expires_at: null,
      failing_since: null,
      deactivated_at: null,
      deactivation_reason: null,
      created_by: actor.userId,
    })
    await auditChange(trx, [row.id])
    return { ...toWebhook(row), secret: secret.generated }
  })
}

export async function getWebhook(db: Db, actor: Actor, id: number): Promise<Webhook> {
  return toWebhook(await requireWebhook(db, actor, id))
}

/** The organization's webhooks a list query asks for; a sync page has tombstones of deleted ones. */
export function listWebhooks(db: Db, actor: Actor, query: WebhookListQuery): RecordList<Webhook> {
  const { paging, filters } = splitListQuery(query)
  const sort = sortOrder(paging.sort, WEBHOOK_SORT_COLUMNS, { field: 'createdAt', direction: 'asc' })
  return recordList(webhookRows(db, actor.organizationId, filters), paging, sort, (rows) =>
    rows.map(toWebhook),
  )
}

/**
 * Replaces the address and events. Deactivating records when and that it was by hand;
 * reactivating clears the failure streak, so a fixed receiver gets a fresh period.
 */
export async function updateWebhook(
  db: Db,
  settings: WebhookSettings,
  actor: Actor,
  id: number,
  body: UpdateWebhookBody,
  expectedVersion: ExpectedVersion,
): Promise<Webhook> {
  await checkUrl(body.url, settings.targets)
  return transactionWithEvents(db, async (trx) => {
    const current = await lockWebhookAt(trx, actor, id, expectedVersion)
    const active = body.active ?? current.active
    const switched =
      active === current.active
        ? {}
        : active
          ? { failing_since: null, deactivated_at: null, deactivation_reason: null }
          : { deactivated_at: new Date(), deactivation_reason: 'MANUAL' as const }
    const row = await webhookRecords.update(trx, actor.organizationId, id, {
      url: body.url,
      events: normalizeEvents(body.events),
      active,
      ...switched,
    })
    // Deliveries that waited while the webhook was inactive are due again.
    if (active && !current.active) announceDeliveries(trx)
    if (row) await auditChange(trx, [id])
    return toWebhook(row ?? current)
  })
}

/** A JSON Merge Patch of the webhook: the merged webhook is checked like a full replacement. */
export async function patchWebhook(
  db: Db,
  settings: WebhookSettings,
  actor: Actor,
  id: number,
  patch: PatchWebhookBody,
  expectedVersion: ExpectedVersion,
  validate: (merged: unknown) => UpdateWebhookBody,
): Promise<Webhook> {
  return patchRecord({
    patch,
    expected: expectedVersion,
    read: () => getWebhook(db, actor, id),
    bodyOf: (webhook) => projectOnto(UpdateWebhookBody, webhook),
    validate,
    write: (body, version) => updateWebhook(db, settings, actor, id, body, version),
  })
}

/** Deletes the webhook; sync readers of the list see a tombstone (left by the database). */
export async function deleteWebhook(
  db: Db,
  actor: Actor,
  id: number,
  expectedVersion: ExpectedVersion,
): Promise<{ id: number }> {
  return db.transaction().execute(async (trx) => {
    await lockWebhookAt(trx, actor, id, expectedVersion)
    await webhookRecords.delete(trx, actor.organizationId, id)
    await auditChange(trx, [id])
    return { id }
  })
}

/**
 * A new signing secret. The one it replaces keeps signing beside it for the overlap period, so
 * receivers can switch without rejecting anything; a second rotation within the period retires
 * the oldest at once.
 */
export async function rotateSecret(
  db: Db,
  settings: WebhookSettings,
  actor: Actor,
  id: number,
  body: RotateSecretBody,
  expectedVersion: ExpectedVersion,
): Promise<WebhookWithSecret> {
  const secret = newSecret(settings, actor, body.secret)
  return db.transaction().execute(async (trx) => {
    const current = await lockWebhookAt(trx, actor, id, expectedVersion)
    const overlap = settings.secretOverlapSeconds > 0
    const row = await webhookRecords.update(trx, actor.organizationId, id, {
      secret: secret.sealed,
      previous_secret: overlap ? current.secret : null,
      previous_secret_expires_at: overlap
        ? new Date(Date.now() + settings.secretOverlapSeconds * 1000)
        : null,
    })
    if (row) await auditChange(trx, [id])
    return { ...toWebhook(row ?? current), secret: secret.generated }
  })
}

export async function sendTestEvent(db: Db, actor: Actor, id: number): Promise<Delivery> {
  return transactionWithEvents(db, async (trx) => {
    const webhook =
      (await webhookRecords.lock(trx, actor.organizationId, id)) ?? (await missingWebhook(trx, actor, id))
    if (!webhook.active) throw inactive()
    const deliveryId = await enqueueTestDelivery(trx, actor.organizationId, id)
    await auditChange(trx, [id])
    const delivery = await findDelivery(trx, actor.organizationId, id, deliveryId)
    return toDelivery(delivery as NonNullable<typeof delivery>)
  })
}

async function requireWebhook(db: Db, actor: Actor, id: number) {
  return (await webhookRecords.find(db, actor.organizationId, id)) ?? missingWebhook(db, actor, id)
}

/** A webhook's deliveries a list query asks for. */
export async function listDeliveries(
  db: Db,
  actor: Actor,
  webhookId: number,
  query: DeliveryListQuery,
): Promise<RecordList<Delivery>> {
  await requireWebhook(db, actor, webhookId)
  const { paging, filters } = splitListQuery(query)
  const sort = sortOrder(paging.sort, DELIVERY_SORT_COLUMNS, { field: 'createdAt', direction: 'desc' })
  const rows = deliveryRows(db, actor.organizationId, webhookId, filters)
  return recordList(rows, paging, sort, (found) => found.map(toDelivery))
}

export async function getDelivery(
  db: Db,
  actor: Actor,
  webhookId: number,
  deliveryId: number,
): Promise<DeliveryDetail> {
  await requireWebhook(db, actor, webhookId)
  const delivery = await findDelivery(db, actor.organizationId, webhookId, deliveryId)
  if (!delivery) throw notFound(`Delivery ${deliveryId}`)
  return toDeliveryDetail(delivery, await listAttempts(db, actor.organizationId, deliveryId))
}

/** Sends a delivery again (failed or not), with the same `webhook-id` and a fresh retry schedule. */
export async function redeliver(
  db: Db,
  actor: Actor,
  webhookId: number,
  deliveryId: number,
): Promise<Delivery> {
  return transactionWithEvents(db, async (trx) => {
    const webhook = await requireWebhook(trx, actor, webhookId)
    if (!webhook.active) throw inactive()
    const requeued = await requeueDelivery(trx, actor.organizationId, webhookId, deliveryId)
    if (!requeued) {
      if (await findDelivery(trx, actor.organizationId, webhookId, deliveryId)) {
        throw new AppError('RES_002', 'The delivery is being sent right now', {
          message: 'Delivery in progress',
        })
      }
      throw notFound(`Delivery ${deliveryId}`)
    }
    // Due again without a new event: no webhook is named, so every worker claims.
    announceDeliveries(trx)
    await auditChange(trx, [webhookId])
    return toDelivery(requeued)
  })
}
