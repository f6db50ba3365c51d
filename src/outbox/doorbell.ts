import { sql } from 'kysely'
import type { Db, Trx } from '../../db/database.js'

/** Where instances that run no worker tell the workers of other instances of new deliveries. */
export const OUTBOX_CHANNEL = 'outbox_events'

/**
 * Wakes delivery once a commit has created deliveries: for the webhooks named, or for anything
 * that may be due when none are named.
 */
export type Doorbell = (webhookIds?: readonly number[]) => void

/**
 * The writer rings after its commit rather than sending a NOTIFY inside its transaction: PostgreSQL
 * takes one lock for all notifying commits of a database and holds it while each is flushed to
 * disk, so with a webhook registered every write that created a delivery waited for every other
 * (under load most of the busy backends were waiting for that lock).
 */
const doorbells = new WeakMap<Db, Doorbell>()

/** What the events of an open transaction will ring once it commits. */
interface Pending {
  webhookIds: number[]
  anything: boolean
}
const pendingOf = new WeakMap<Db, Pending>()

declare const RECORDS_EVENTS: unique symbol

/**
 * A transaction opened by `transactionWithEvents`, which announces the deliveries of the events
 * recorded in it once it commits: the only transaction that the functions recording events accept.
 */
export type EventTrx = Trx & { readonly [RECORDS_EVENTS]: true }

/**
 * A handle an event may be recorded through: the database, for a statement that commits by itself,
 * or an EventTrx. Taken as `D & EventHandle<D>`, it makes a handle typed as any other transaction
 * a type error.
 */
export type EventHandle<D extends Db> = D extends EventTrx ? D : D extends Trx ? never : D

/** Where the deliveries committed through `db` are announced (the outbox plugin installs it). */
export function installDoorbell(db: Db, doorbell: Doorbell): void {
  doorbells.set(db, doorbell)
}

/**
 * Announces deliveries a statement through `db` created: at once when it has committed, at the
 * commit when it runs in a transaction opened by `transactionWithEvents`. Without a doorbell (a
 * script, the CLI) workers find them when they next poll.
 */
export function announceDeliveries<D extends Db>(
  db: D & EventHandle<D>,
  webhookIds?: readonly number[],
): void {
  if (!db.isTransaction) {
    doorbells.get(db)?.(webhookIds)
    return
  }
  const pending = pendingOf.get(db)
  // Still reachable: a transaction passes for the database where a parameter is typed as the
  // database (Transaction extends Kysely), as a service's `db: Db` is.
  if (!pending) {
    throw new Error(
      'events are recorded in a transaction opened by transactionWithEvents(), which announces their deliveries once it commits',
    )
  }
  if (webhookIds) pending.webhookIds.push(...webhookIds)
  else pending.anything = true
}

/**
 * Runs `work` in a transaction and announces the deliveries its events created once it has
 * committed. Inside a transaction opened here already (a FHIR transaction Bundle's), `work` joins
 * it: its deliveries are announced with that transaction's.
 */
export async function transactionWithEvents<T>(db: Db, work: (trx: EventTrx) => Promise<T>): Promise<T> {
  if (db.isTransaction && pendingOf.has(db)) return work(db as EventTrx)
  const pending: Pending = { webhookIds: [], anything: false }
  const result = await db.transaction().execute((trx) => {
    pendingOf.set(trx, pending)
    return work(trx as EventTrx)
  })
  if (pending.anything) announceDeliveries(db)
  else if (pending.webhookIds.length > 0) announceDeliveries(db, pending.webhookIds)
  return result
}

/**
 * The doorbell of an instance whose worker is not running (OUTBOX_WORKER=false) on PostgreSQL: a
 * NOTIFY to the workers of the other instances, from a statement of its own so that no write waits
 * for it. One is sent at a time, with every announcement made since the last one went out, so under
 * load it costs a statement per round trip rather than one per write. A NOTIFY that fails is only
 * logged: the workers poll.
 */
export function notifyingDoorbell(db: Db, onError: (error: unknown) => void): Doorbell {
  let pending: { webhookIds: Set<number>; anything: boolean } | undefined
  let sending = false
  const send = async () => {
    sending = true
    while (pending) {
      const { webhookIds, anything } = pending
      pending = undefined
      const payloads = anything ? [''] : [...webhookIds].map(String)
      await sql`select pg_notify(${OUTBOX_CHANNEL}, payload) from unnest(${payloads}::text[]) as payload`
        .execute(db)
        .catch(onError)
    }
    sending = false
  }
  return (webhookIds) => {
    pending ??= { webhookIds: new Set(), anything: false }
    if (webhookIds) for (const id of webhookIds) pending.webhookIds.add(id)
    else pending.anything = true
    // On the next turn, so that the announcements of this one go out together.
    if (!sending) {
      sending = true
      setImmediate(() => void send())
    }
  }
}
