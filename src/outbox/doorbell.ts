import { type Kysely, sql } from 'kysely'
import type { Database, Db, Trx } from '../../db/database.js'

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
const doorbells = new WeakMap<Kysely<Database>, Doorbell>()

/** What the events of an open transaction will ring once it commits. */
interface Pending {
  webhookIds: number[]
  anything: boolean
}
const pendingOf = new WeakMap<Trx, Pending>()

/** Where the deliveries committed through `db` are announced (the outbox plugin installs it). */
export function installDoorbell(db: Kysely<Database>, doorbell: Doorbell): void {
  doorbells.set(db, doorbell)
}

/**
 * Announces deliveries a statement through `db` created: at once when it has committed, at the
 * commit when it runs in a transaction opened by `transactionWithEvents`. Without a doorbell (a
 * script, the CLI) workers find them when they next poll.
 */
export function announceDeliveries(db: Db, webhookIds?: readonly number[]): void {
  if (!db.isTransaction) {
    doorbells.get(db as Kysely<Database>)?.(webhookIds)
    return
  }
  const pending = pendingOf.get(db as Trx)
  if (!pending) {
    throw new Error(
      'events are recorded in a transaction opened by transactionWithEvents(), which announces their deliveries once it commits',
    )
  }
  if (webhookIds) pending.webhookIds.push(...webhookIds)
  else pending.anything = true
}

/** Runs `work` in a transaction and announces the deliveries its events created once it has committed. */
export async function transactionWithEvents<T>(
  db: Kysely<Database>,
  work: (trx: Trx) => Promise<T>,
): Promise<T> {
  const pending: Pending = { webhookIds: [], anything: false }
  const result = await db.transaction().execute((trx) => {
    pendingOf.set(trx, pending)
    return work(trx)
  })
  if (pending.anything) announceDeliveries(db)
  else if (pending.webhookIds.length > 0) announceDeliveries(db, pending.webhookIds)
  return result
}

/**
 * The doorbell of an instance that runs no worker (OUTBOX_WORKER=false): a NOTIFY to the workers of
 * the others, sent once per turn of the event loop for that turn's commits, from a statement of its
 * own so that no write waits for it. A NOTIFY that fails is only logged: the workers poll.
 */
export function notifyingDoorbell(db: Kysely<Database>, onError: (error: unknown) => void): Doorbell {
  let pending: { webhookIds: Set<number>; anything: boolean } | undefined
  const send = async (webhookIds: number[], anything: boolean) => {
    const payloads = anything ? [''] : webhookIds.map(String)
    await sql`select pg_notify(${OUTBOX_CHANNEL}, payload) from unnest(${payloads}::text[]) as payload`.execute(
      db,
    )
  }
  return (webhookIds) => {
    if (!pending) {
      const turn = { webhookIds: new Set<number>(), anything: false }
      pending = turn
      setImmediate(() => {
        pending = undefined
        send([...turn.webhookIds], turn.anything).catch(onError)
      })
    }
    if (webhookIds) for (const id of webhookIds) pending.webhookIds.add(id)
    else pending.anything = true
  }
}
