import { setTimeout as sleep } from 'node:timers/promises'
import type { Db } from '../../../db/database.js'
import {
  type ChangeFeed,
  type ChangeFeedQuery,
  FEED_NOW,
  type FeedEvent,
} from '../../../schemas/change-feed.js'
import { EVENT_NAMES, type EventName } from '../../../schemas/events.js'
import type { Principal } from '../../identity/principal.js'
import type { FeedWaiter } from './feed-waiter.js'
import { type FeedPosition, type FeedRow, readFeedRows, readHorizon } from './queries.js'

// A long poll reads again at least this often, in case it was not woken: an event that became
// readable after a newer one did changes nothing the waiter watches.
const RECHECK_MS = 1000
// …and at most this often: every change wakes every long poll (whatever its organization), so
// under a stream of commits each poll still costs at most 40 reads a second.
const MIN_READ_INTERVAL_MS = 25

const BEGINNING: FeedPosition = { transactionId: '0', eventId: '0' }

const encode = (position: FeedPosition) => `${position.transactionId}-${position.eventId}`

/** A position the query schema admitted (`<xid>-<id>`, decimal). */
function decode(text: string): FeedPosition {
  const [transactionId = '0', eventId = '0'] = text.split('-')
  return { transactionId, eventId }
}

/** Everything below the horizon has been read once no event below it is left. */
const horizonPosition = (horizon: string): FeedPosition => ({ transactionId: horizon, eventId: '0' })

function compare(a: FeedPosition, b: FeedPosition): number {
  const byTransaction = BigInt(a.transactionId) - BigInt(b.transactionId)
  if (byTransaction !== 0n) return byTransaction < 0n ? -1 : 1
  const byId = BigInt(a.eventId) - BigInt(b.eventId)
  return byId === 0n ? 0 : byId < 0n ? -1 : 1
}

const later = (a: FeedPosition, b: FeedPosition) => (compare(a, b) >= 0 ? a : b)

function toFeedEvent(row: FeedRow): FeedEvent {
  return {
    position: encode({ transactionId: row.transaction_id, eventId: row.id }),
    // The query reads only these names (event_type is the payload's event).
    event: row.payload.event as EventName,
    timestamp: row.payload.timestamp,
    data: row.payload.data,
  }
}

async function readPage(
  db: Db,
  organizationId: number,
  after: FeedPosition,
  types: readonly string[],
  limit: number,
): Promise<ChangeFeed> {
  const { rows, horizon } = await db
    .transaction()
    .setAccessMode('read only')
    .execute((trx) => readFeedRows(trx, organizationId, after, types, limit))
  const events = rows.map(toFeedEvent)
  const last = rows.at(-1)
  if (last && rows.length === limit) {
    return {
      events,
      position: encode({ transactionId: last.transaction_id, eventId: last.id }),
      caughtUp: false,
    }
  }
  // Fewer than asked: every event below the horizon has been scanned, so the next read may start
  // there. The horizon is above every row returned (they were read below it).
  return { events, position: encode(later(after, horizonPosition(horizon))), caughtUp: true }
}

async function startOf(db: Db, after: string | undefined): Promise<FeedPosition> {
  if (after === undefined) return BEGINNING
  if (after === FEED_NOW) return horizonPosition(await readHorizon(db))
  return decode(after)
}

/**
 * One answer of the change feed: the caller's organization's events after `query.after`. With
 * `wait`, an empty answer is held until an event may have become readable (the waiter wakes it),
 * a recheck is due, the time is up, the client has gone (`signal`) or the app is closing; at most
 * `wait` seconds plus one read.
 */
export async function readChangeFeed(
  db: Db,
  waiter: FeedWaiter,
  actor: Principal,
  query: ChangeFeedQuery,
  signal: AbortSignal,
): Promise<ChangeFeed> {
  const types = query.types === undefined ? EVENT_NAMES : [...new Set(query.types.split(','))]
  const after = await startOf(db, query.after)
  const deadline = Date.now() + query.wait * 1000
  // Before the first read, so that an event committing during it wakes this poll.
  const watch = query.wait > 0 ? await waiter.watch() : undefined
  try {
    let readAt = Date.now()
    let page = await readPage(db, actor.organizationId, after, types, query.limit)
    while (
      watch &&
      page.events.length === 0 &&
      !signal.aborted &&
      !waiter.isClosed &&
      Date.now() < deadline
    ) {
      await watch.next(Math.min(RECHECK_MS, deadline - Date.now()), signal)
      const spacing = readAt + MIN_READ_INTERVAL_MS - Date.now()
      if (spacing > 0) await sleep(spacing)
      if (signal.aborted || waiter.isClosed) break
      readAt = Date.now()
      page = await readPage(db, actor.organizationId, after, types, query.limit)
    }
    return page
  } finally {
    watch?.end()
  }
}
