import type { Trx } from '../../../db/database.js'
import { type Gathering, openGathering } from '../../lib/gathered-writes.js'

/** The references a resource holds (any `reference` member, at any depth), to rewrite in place. */
export function eachReference(value: unknown, visit: (holder: { reference: string }) => void): void {
  if (Array.isArray(value)) {
    for (const item of value) eachReference(item, visit)
  } else if (typeof value === 'object' && value !== null) {
    const holder = value as Record<string, unknown>
    if (typeof holder.reference === 'string') visit(holder as { reference: string })
    for (const member of Object.values(holder)) eachReference(member, visit)
  }
}

/** What a group asks of a transaction's entry. */
interface GroupedEntry {
  method: string
  type: { type: string }
  fullUrl?: string
  resource?: unknown
  ifNoneExist?: unknown
}

/**
 * A transaction's consecutive creates of one type, whose writes are made in one statement: each
 * entry runs as it would alone up to its write, which waits there (src/lib/gathered-writes.ts) for
 * the group to be written. The group is written before an entry that may read what it writes: any
 * but a create of its type, and such a create with If-None-Exist, a conditional reference, or a
 * reference to one of the group's own full URLs (whose ids are known once written). A failure comes
 * from the first entry in order that fails, as when each is written alone. Only writes made through
 * gatheredWrite wait, and a type's creates make all theirs so (the clinical records') or none: an
 * entry that makes none runs to its end before the next starts, as before.
 */
export function groupedCreates(trx: Trx) {
  let gathering: Gathering | undefined
  let type: string | undefined
  const fullUrls = new Set<string>()
  const waiting: Promise<void>[] = []

  function takes(entry: GroupedEntry): boolean {
    if (waiting.length === 0) return true
    if (entry.method !== 'POST' || entry.type.type !== type || entry.ifNoneExist) return false
    let independent = true
    eachReference(entry.resource, ({ reference }) => {
      independent &&= !fullUrls.has(reference) && !reference.includes('?')
    })
    return independent
  }

  /**
   * Makes the group's writes and waits for its entries to end (none goes on once the transaction
   * ends): whether the writes' statement succeeded, and the first entry's failure, in order.
   */
  async function flush() {
    const current = gathering
    const entries = waiting.splice(0)
    gathering = undefined
    type = undefined
    fullUrls.clear()
    const written = (await current?.flush()) ?? true
    const ends = await Promise.allSettled(entries)
    const failure = ends.find((end): end is PromiseRejectedResult => end.status === 'rejected')
    return { written, failure }
  }

  /** Writes the group; the failure of the first of its entries that fails, in order, is its. */
  async function write(): Promise<void> {
    const { failure } = await flush()
    if (failure) throw failure.reason
  }

  return {
    write,
    close: () => gathering?.close(),

    /** Runs an entry: in the group if it takes it, else once the group is written. */
    async run(entry: GroupedEntry, work: () => Promise<void>): Promise<void> {
      if (!takes(entry)) await write()
      gathering ??= openGathering(trx)
      const joined = gathering.joined()
      const running = work()
      // Its failure is answered where it ends (below, or by flush); not an unhandled one meanwhile.
      running.catch(() => {})
      const waits = await Promise.race([
        joined.then(() => true),
        running.then(
          () => false,
          () => false,
        ),
      ])
      if (waits) {
        type = entry.type.type
        if (entry.fullUrl) fullUrls.add(entry.fullUrl)
        waiting.push(running)
        return
      }
      try {
        await running
      } catch (error) {
        // The group's entries come before it: theirs is the failure if one fails. Unless their
        // statement fails, as it does once this failure has aborted the transaction.
        const { written, failure } = await flush()
        throw written && failure ? failure.reason : error
      }
    },
  }
}
