import { sql } from 'kysely'
import { acrossOrganizations } from '../../db/across-organizations.js'
import type { Db } from '../../db/database.js'
import { leaseFree, noLease, takeLease } from '../../db/leases.js'
import { prepared } from '../../db/prepared-statements.js'
import type { StoredPayload } from '../../schemas/events.js'

/** A delivery this worker holds a lease on, with what sending it needs. */
export interface ClaimedDelivery {
  id: number
  message_id: string
  webhook_id: number
  organization_id: number
  event_type: string
  retry_step: number
  url: string
  secret: string
  /** The secret replaced by the last rotation, while it still signs too. */
  previous_secret: string | null
  payload: StoredPayload
}

/**
 * Claims due deliveries of active webhooks, each under a lease of `leaseSeconds` (db/leases.ts).
 * SKIP LOCKED lets several instances claim at once without waiting on or taking each other's rows;
 * the lease keeps a claimed row away from them afterwards, and once it lapses the work of an
 * instance that died is claimed again.
 *
 * Shaped to cost the same whatever the statistics say, since they are often wrong about this table
 * (the embedded database never analyzes; PostgreSQL only some time after a burst, or never with
 * autovacuum off): the claimed ids reach the update as an array and the webhook and event of each
 * are looked up by primary key, where joins planned on stale estimates scanned whole tables and had
 * the claim compiled with JIT (docs/performance-log.md).
 *
 * `pinPlan` (the embedded database) also claims in a transaction of its own without bitmap scans,
 * as the change feed's read does: the planner then walks the due index in order and stops at
 * `limit`, rather than reading every due delivery and sorting them. On PostgreSQL, whose statistics
 * autovacuum keeps current, the transaction would cost each claim three more round trips, which
 * showed in the delivery latency.
 */
export async function claimDeliveries(
  db: Db,
  options: {
    limit: number
    leaseOwner: string
    leaseSeconds: number
    skipWebhookIds: readonly number[]
    pinPlan: boolean
  },
): Promise<ClaimedDelivery[]> {
  const skip =
    options.skipWebhookIds.length > 0
      ? sql`and candidate.webhook_id not in (${sql.join(options.skipWebhookIds)})`
      : sql``
  const claim = async (trx: Db) => {
    const { rows } = await prepared(sql<ClaimedDelivery>`${acrossOrganizations('outbox worker')}
    update webhook_deliveries
    set ${takeLease('webhook_deliveries', options.leaseOwner, options.leaseSeconds)}
    where webhook_deliveries.id = any(array(
      select candidate.id
      from webhook_deliveries candidate
      join webhooks target on target.id = candidate.webhook_id
      where candidate.status = 'PENDING'
        and candidate.next_attempt_at <= now()
        and ${leaseFree('webhook_deliveries', 'candidate')}
        and target.active
        ${skip}
      order by candidate.next_attempt_at
      limit ${options.limit}
      for update of candidate skip locked
    ))
    returning webhook_deliveries.id, webhook_deliveries.message_id, webhook_deliveries.webhook_id,
      webhook_deliveries.organization_id, webhook_deliveries.event_type, webhook_deliveries.retry_step,
      (select url from webhooks where id = webhook_deliveries.webhook_id) as url,
      (select secret from webhooks where id = webhook_deliveries.webhook_id) as secret,
      (select case when previous_secret_expires_at > now() then previous_secret end
        from webhooks where id = webhook_deliveries.webhook_id) as previous_secret,
      (select payload from outbox_events where id = webhook_deliveries.event_id) as payload
  `).execute(trx)
    return rows
  }
  if (!options.pinPlan) return claim(db)
  return db.transaction().execute(async (trx) => {
    await sql`select set_config('enable_bitmapscan', 'off', true)`.execute(trx)
    return claim(trx)
  })
}

/**
 * Not waiting for the commit of a statement that records attempts to reach disk: if the database
 * crashed and lost it, the lease would lapse and the delivery be sent again, which at-least-once
 * allows. It saves a disk flush per statement. A transaction-local setting made inside a statement
 * run on its own lasts until that statement's implicit transaction commits, so no explicit
 * transaction (three more round trips) is needed for it.
 */
const asyncCommit = sql`set_config('synchronous_commit', 'off', true) is not null as async_commit`

export interface FailedAttempt {
  deliveryId: number
  webhookId: number
  leaseOwner: string
  attemptedAt: Date
  statusCode: number | null
  error: string
  latencyMs: number
  /** Seconds until the retry; null: failed for good. */
  retryInSeconds: number | null
  deactivateAfterSeconds: number
}

/**
 * Records one failed attempt in one statement: the attempt row, the delivery's new state and the
 * webhook's failure streak (deactivating it once it has failed for long enough). Returns whether
 * this attempt deactivated the webhook. A delivery whose lease another instance took over keeps
 * that instance's state; the attempt is recorded all the same (unless the webhook was deleted).
 */
export async function recordFailure(db: Db, result: FailedAttempt): Promise<{ deactivated: boolean }> {
  const status = result.retryInSeconds === null ? 'FAILED' : 'PENDING'
  const nextAttempt =
    result.retryInSeconds === null
      ? sql`next_attempt_at`
      : sql`now() + ${result.retryInSeconds}::float8 * interval '1 second'`
  const webhookUpdate = sql`
      update webhooks set
        failing_since = coalesce(webhooks.failing_since, now()),
        active = not streak.deactivate and webhooks.active,
        deactivated_at = case when streak.deactivate then now() else webhooks.deactivated_at end,
        deactivation_reason = case when streak.deactivate then 'FAILING' else webhooks.deactivation_reason end
      from (
        select id, active and coalesce(
          failing_since <= now() - ${result.deactivateAfterSeconds}::float8 * interval '1 second', false
        ) as deactivate
        from webhooks where id = ${result.webhookId}
      ) streak
      -- Only a change the webhook shows (its streak starting, its deactivation) is written, so that
      -- failed attempts alone do not raise its version and fail an administrator's If-Match.
      where webhooks.id = streak.id and (webhooks.failing_since is null or streak.deactivate)
      returning streak.deactivate as deactivated`
  const { rows } = await prepared(sql<{ deactivated: boolean }>`${acrossOrganizations('outbox worker')}
    with attempt as (
      insert into webhook_delivery_attempts (delivery_id, organization_id, attempted_at, status_code, error, latency_ms, instance_id)
      select id, organization_id, ${result.attemptedAt}, ${result.statusCode}, ${result.error}, ${result.latencyMs}, ${result.leaseOwner}
      from webhook_deliveries where id = ${result.deliveryId}
    ), delivery as (
      update webhook_deliveries set
        status = ${status},
        attempt_count = attempt_count + 1,
        retry_step = retry_step + 1,
        next_attempt_at = ${nextAttempt},
        last_attempt_at = ${result.attemptedAt},
        last_status_code = ${result.statusCode},
        last_error = ${result.error},
        last_latency_ms = ${result.latencyMs},
        completed_at = ${status === 'PENDING' ? null : sql`now()`},
        ${noLease('webhook_deliveries')}
      where id = ${result.deliveryId} and locked_by = ${result.leaseOwner}
    ), webhook as (${webhookUpdate})
    select coalesce((select bool_or(deactivated) from webhook), false) as deactivated, ${asyncCommit}
  `).execute(db)
  return { deactivated: rows[0]?.deactivated === true }
}

export interface Success {
  deliveryId: number
  webhookId: number
  attemptedAt: Date
  statusCode: number | null
  latencyMs: number
}

/**
 * Records many successful attempts in one statement, as `recordFailure` records a failure: under
 * load the worker's throughput is bounded by these writes, not by sending. A success never
 * deactivates a webhook; it only ends its failure streak. The ids are given to the planner as well
 * as joined: with statistics never updated it would otherwise scan the whole table to join them
 * (docs/performance-log.md).
 */
export async function recordSuccesses(
  db: Db,
  leaseOwner: string,
  successes: readonly Success[],
): Promise<void> {
  if (successes.length === 0) return
  const ids = successes.map((s) => s.deliveryId)
  const attemptedAt = successes.map((s) => s.attemptedAt.toISOString())
  const statusCodes = successes.map((s) => s.statusCode)
  const latencies = successes.map((s) => s.latencyMs)
  const webhookIds = [...new Set(successes.map((s) => s.webhookId))]
  await sql`${acrossOrganizations('outbox worker')}
    with input as (
      select * from unnest(${ids}::bigint[], ${attemptedAt}::timestamptz[], ${statusCodes}::int[], ${latencies}::int[])
        as t(delivery_id, attempted_at, status_code, latency_ms)
    ), attempt as (
      insert into webhook_delivery_attempts (delivery_id, organization_id, attempted_at, status_code, error, latency_ms, instance_id)
      select d.id, d.organization_id, input.attempted_at, input.status_code, null, input.latency_ms, ${leaseOwner}
      from input join webhook_deliveries d on d.id = input.delivery_id
      where d.id = any(${ids}::bigint[])
    ), delivery as (
      update webhook_deliveries set
        status = 'SUCCEEDED',
        attempt_count = attempt_count + 1,
        last_attempt_at = input.attempted_at,
        last_status_code = input.status_code,
        last_error = null,
        last_latency_ms = input.latency_ms,
        completed_at = now(),
        ${noLease('webhook_deliveries')}
      from input
      where webhook_deliveries.id = any(${ids}::bigint[]) and webhook_deliveries.id = input.delivery_id
        and webhook_deliveries.locked_by = ${leaseOwner}
    ), streak as (
      update webhooks set failing_since = null
      where id = any(${webhookIds}::int[]) and failing_since is not null
    )
    select ${asyncCommit}
  `.execute(db)
}

/**
 * Pending deliveries of active webhooks, how long the oldest has waited, and how many webhooks are
 * deactivated for failing (all instances and organizations: an operations figure, no tenant data).
 */
export async function backlog(
  db: Db,
): Promise<{ pending: number; oldestAgeSeconds: number; deactivated: number }> {
  const { rows } = await sql<{
    pending: number
    oldest_age_seconds: number | null
    deactivated: number
  }>`${acrossOrganizations('operations metrics')}
    select count(*)::int as pending,
      extract(epoch from now() - min(webhook_deliveries.created_at))::float8 as oldest_age_seconds,
      (select count(*)::int from webhooks where not active and deactivation_reason = 'FAILING') as deactivated
    from webhook_deliveries join webhooks on webhooks.id = webhook_deliveries.webhook_id
    where webhook_deliveries.status = 'PENDING' and webhooks.active
  `.execute(db)
  return {
    pending: rows[0]?.pending ?? 0,
    oldestAgeSeconds: rows[0]?.oldest_age_seconds ?? 0,
    deactivated: rows[0]?.deactivated ?? 0,
  }
}
