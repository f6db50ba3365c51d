import { setTimeout as sleep } from 'node:timers/promises'

/** How often the newest event is read while long polls wait. */
export const FEED_POLL_MS = 100

/**
 * Wakes the change feed's long polls when a new event has committed. While any long poll waits,
 * one query per app reads the id of the newest event every `pollMs`; when it has changed, every
 * waiter wakes and reads its feed again (long polls of other organizations too: a re-read is one
 * short index range scan, and the service spaces them). An event that commits after a newer one
 * was seen wakes nobody; its poll finds it at the next recheck.
 *
 * Reading rather than a NOTIFY sent by each writing transaction: PostgreSQL takes one lock for all
 * notifying commits of a database and holds it while the commit is flushed to disk, which made every
 * write of the service wait for every other.
 */
export class FeedWaiter {
  private readonly waiters = new Set<() => void>()
  private polling: Promise<void> | undefined
  private closed = false

  constructor(
    private readonly newestEvent: () => Promise<string | null>,
    private readonly pollMs = FEED_POLL_MS,
  ) {}

  /** How many long polls are waiting right now. */
  get waiting(): number {
    return this.waiters.size
  }

  get isClosed(): boolean {
    return this.closed
  }

  /**
   * Resolves when a new event is seen (`true`), or with `false` after `ms`, when `signal` aborts or
   * when the app closes, whichever comes first; never rejects.
   */
  async wait(ms: number, signal: AbortSignal): Promise<boolean> {
    if (this.closed || signal.aborted || ms <= 0) return false
    return new Promise<boolean>((resolve) => {
      const finish = (woken: boolean) => {
        clearTimeout(timer)
        signal.removeEventListener('abort', stop)
        this.waiters.delete(wake)
        resolve(woken)
      }
      const wake = () => finish(true)
      const stop = () => finish(false)
      const timer = setTimeout(stop, ms)
      signal.addEventListener('abort', stop, { once: true })
      this.waiters.add(wake)
      this.polling ??= this.poll().finally(() => {
        this.polling = undefined
      })
    })
  }

  /** Ends every wait at once (the app is closing) and stops reading. */
  async close(): Promise<void> {
    this.closed = true
    // Woken as by a new event; the feed sees the waiter closed and answers with what it has.
    this.wakeAll()
    await this.polling
  }

  private wakeAll(): void {
    for (const wake of [...this.waiters]) wake()
  }

  private async poll(): Promise<void> {
    // A failed read leaves the waits to their timers (the feed re-reads every second anyway).
    const read = () => this.newestEvent().catch(() => undefined)
    let seen = await read()
    while (this.waiters.size > 0 && !this.closed) {
      await sleep(this.pollMs)
      if (this.waiters.size === 0 || this.closed) break
      const newest = await read()
      if (newest === undefined) continue
      if (seen !== undefined && newest !== seen) this.wakeAll()
      seen = newest
    }
  }
}
