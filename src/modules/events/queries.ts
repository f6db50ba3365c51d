import { sql } from 'kysely'
import { acrossOrganizations } from '../../../db/across-organizations.js'
import type { Db, Trx } from '../../../db/database.js'
import type { StoredPayload } from '../../../schemas/events.js'

/** A place in the feed: the writing transaction (xid8, decimal) and the event id within it. */
export interface FeedPosition {
  transactionId: string
  eventId: string
}

export interface FeedRow {
  id: string
  transaction_id: string
  payload: StoredPayload
}

export interface FeedRows {
  rows: FeedRow[]
  /** pg_snapshot_xmin of the snapshot the rows were read in: every transaction below it had ended. */
  horizon: string
}

/**
 * The organization's events after `after`, in (transaction id, id) order, of transactions below the
 * snapshot's xmin only: those have all ended, so no event can still commit before the last one
 * returned. The horizon comes from the same statement, hence the same snapshot as the rows; a
 * separate query could see a later xmin and let the caller step past rows this one did not see.
 *
 * In a transaction of its own, because of one planner setting: with statistics that undercount the
 * organization's events (the embedded database never analyzes; PostgreSQL only some time after a
 * bulk load), the planner prefers a bitmap scan of every event after `after` plus a sort, which
 * makes each page cost the whole backlog (docs/performance-log.md). Without bitmap scans it walks
 * the feed index in order and stops at `limit`.
 */
export async function readFeedRows(
  trx: Trx,
  organizationId: number,
  after: FeedPosition,
  types: readonly string[],
  limit: number,
): Promise<FeedRows> {
  await sql`select set_config('enable_bitmapscan', 'off', true)`.execute(trx)
  const { rows } = await sql<{
    horizon: string
    id: string | null
    transaction_id: string | null
    payload: StoredPayload | null
  }>`
    with horizon as materialized (select pg_snapshot_xmin(pg_current_snapshot()) as xmin)
    select horizon.xmin::text as horizon, feed.id::text as id, feed.transaction_id::text as transaction_id,
      feed.payload
    from horizon left join lateral (
      select id, transaction_id, payload
      from outbox_events
      where organization_id = ${organizationId}
        and (transaction_id, id) > (${after.transactionId}::xid8, ${after.eventId}::bigint)
        and transaction_id < horizon.xmin
        and event_type = any(${types}::text[])
      order by transaction_id, id
      limit ${limit}
    ) feed on true
    order by feed.transaction_id, feed.id
  `.execute(trx)
  const feed: FeedRow[] = []
  for (const { id, transaction_id, payload } of rows) {
    if (id !== null && transaction_id !== null && payload !== null) feed.push({ id, transaction_id, payload })
  }
  // The lateral join yields the horizon row even when no event follows it.
  return { horizon: (rows[0] as { horizon: string }).horizon, rows: feed }
}

/** The current horizon: pg_snapshot_xmin of a fresh snapshot. */
export async function readHorizon(db: Db): Promise<string> {
  const { rows } = await sql<{ xmin: string }>`
    select pg_snapshot_xmin(pg_current_snapshot())::text as xmin
  `.execute(db)
  return (rows[0] as { xmin: string }).xmin
}

/**
 * What the change feed's waiter watches: the newest event of any organization, and whether it has
 * become readable yet (its transaction below the horizon). The mark changes when a long poll may
 * find something new: a newer event, or the newest one coming out from behind an older open
 * transaction (of any database on the server: transaction ids are the server's).
 */
export async function feedMark(db: Db): Promise<string | null> {
  const { rows } = await sql<{ mark: string }>`${acrossOrganizations('change feed waiter')}
    select id::text || case when transaction_id < pg_snapshot_xmin(pg_current_snapshot()) then '' else ' pending' end as mark
    from outbox_events order by id desc limit 1`.execute(db)
  return rows[0]?.mark ?? null
}
