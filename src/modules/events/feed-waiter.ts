import type { DatabaseHandle, Unlisten } from '../../../db/connect.js'
import { FEED_CHANNEL } from '../../outbox/enqueue.js'

/**
 * Wakes the change feed's long polls when an event commits. One LISTEN per app, opened by the first
 * long poll and closed with the app; every notification wakes every waiter, which then reads the
 * feed again. (`DatabaseHandle.listen` reports a notification without its payload, so long polls
 * of other organizations wake too; a re-read is one short index range scan, and the service
 * spaces them.)
 */
export class FeedWaiter {
  private readonly waiters = new Set<() => void>()
  private listening: Promise<Unlisten> | undefined
  private closed = false

  constructor(private readonly listen: DatabaseHandle['listen']) {}

  /** How many long polls are waiting right now. */
  get waiting(): number {
    return this.waiters.size
  }

  get isClosed(): boolean {
    return this.closed
  }

  /**
   * Resolves on the next notification (`true`), or with `false` after `ms`, when `signal` aborts
   * or when the app closes, whichever comes first; never rejects.
   */
  async wait(ms: number, signal: AbortSignal): Promise<boolean> {
    if (this.closed || signal.aborted || ms <= 0) return false
    await this.startListening()
    if (this.closed || signal.aborted) return false
    return new Promise<boolean>((resolve) => {
      const finish = (notified: boolean) => {
        clearTimeout(timer)
        signal.removeEventListener('abort', stop)
        this.waiters.delete(wake)
        resolve(notified)
      }
      const wake = () => finish(true)
      const stop = () => finish(false)
      const timer = setTimeout(stop, ms)
      signal.addEventListener('abort', stop, { once: true })
      this.waiters.add(wake)
    })
  }

  /** Ends every wait at once (the app is closing) and stops listening. */
  async close(): Promise<void> {
    this.closed = true
    // Woken as by a notification; the feed sees the waiter closed and answers with what it has.
    this.wakeAll()
    const listening = this.listening
    this.listening = undefined
    if (listening) await (await listening.catch(() => async () => {}))()
  }

  private wakeAll(): void {
    for (const wake of [...this.waiters]) wake()
  }

  private startListening(): Promise<unknown> {
    if (!this.listening) {
      const started = this.listen(FEED_CHANNEL, () => this.wakeAll())
      this.listening = started
      // A failed LISTEN leaves the waits to their timers (the feed re-reads every second anyway);
      // the next long poll tries again.
      started.catch(() => {
        if (this.listening === started) this.listening = undefined
      })
    }
    return this.listening.catch(() => undefined)
  }
}
