import { setTimeout as sleep } from 'node:timers/promises'

/** How often the feed's mark is read while long polls wait. */
const FEED_POLL_MS = 100

/** One long poll's interest in new events, from before its first read of the feed to its answer. */
export interface FeedWatch {
  /**
   * Resolves `true` as soon as the mark has changed since the watch began or since the last
   * call returned `true` (at once if one already has), or `false` after `ms`, when `signal` aborts
   * or when the app closes, whichever comes first; never rejects.
   */
  next(ms: number, signal: AbortSignal): Promise<boolean>
  /** Stops watching; the reads stop when no watch is left. */
  end(): void
}

/**
 * Wakes the change feed's long polls when they may find something new. While any long poll
 * watches, one query per app reads the feed's mark every `pollMs` (the newest event of any
 * organization, and whether it is readable yet: `feedMark`); each change counts as one generation,
 * and every watch that has not seen it wakes and reads its feed again (long polls of other
 * organizations too: a re-read is one short index range scan, and the service spaces them). An
 * event that becomes readable after a newer one did wakes nobody; its poll finds it at a recheck.
 *
 * A watch begins before its long poll's first read of the feed, and only once the mark has been
 * read at least once since: an event that commits between that read and the feed's is a new
 * generation for the watch, never part of its starting point.
 *
 * Reading rather than a NOTIFY sent by each writing transaction: PostgreSQL takes one lock for all
 * notifying commits of a database and holds it while the commit is flushed to disk, which made every
 * write of the service wait for every other.
 */
export class FeedWaiter {
  private readonly watches = new Set<WatchState>()
  private generation = 0
  private polling: Promise<void> | undefined
  /** Settles after the current reading loop's first read: a new watch's starting point. */
  private firstRead: Promise<void> | undefined
  private closed = false

  constructor(
    private readonly readMark: () => Promise<string | null>,
    private readonly pollMs = FEED_POLL_MS,
  ) {}

  /** How many long polls are watching right now. */
  get waiting(): number {
    return this.watches.size
  }

  get isClosed(): boolean {
    return this.closed
  }

  /** Begins a watch; resolves once the mark has been read since the call. */
  async watch(): Promise<FeedWatch> {
    const state: WatchState = { since: this.generation, wake: undefined }
    if (!this.closed) {
      this.watches.add(state)
      if (!this.polling) {
        let first!: () => void
        this.firstRead = new Promise((resolve) => {
          first = resolve
        })
        this.polling = this.poll(first)
      }
      await this.firstRead
      state.since = this.generation
    }
    return {
      next: (ms, signal) => this.next(state, ms, signal),
      end: () => {
        this.watches.delete(state)
      },
    }
  }

  /** Ends every wait at once (the app is closing) and stops reading. */
  async close(): Promise<void> {
    this.closed = true
    // The feed sees the waiter closed and answers with what it has.
    for (const state of this.watches) state.wake?.(false)
    await this.polling
  }

  private next(state: WatchState, ms: number, signal: AbortSignal): Promise<boolean> {
    if (this.generation !== state.since) {
      state.since = this.generation
      return Promise.resolve(true)
    }
    if (this.closed || signal.aborted || ms <= 0) return Promise.resolve(false)
    return new Promise<boolean>((resolve) => {
      const finish = (woken: boolean) => {
        clearTimeout(timer)
        signal.removeEventListener('abort', stop)
        state.wake = undefined
        if (woken) state.since = this.generation
        resolve(woken)
      }
      const stop = () => finish(false)
      const timer = setTimeout(stop, ms)
      signal.addEventListener('abort', stop, { once: true })
      state.wake = finish
    })
  }

  private async poll(firstRead: () => void): Promise<void> {
    // A failed read leaves the waits to their timers (the feed rechecks every second anyway).
    const read = () => this.readMark().catch(() => undefined)
    try {
      let seen = await read()
      firstRead()
      while (this.watches.size > 0 && !this.closed) {
        await sleep(this.pollMs)
        if (this.watches.size === 0 || this.closed) break
        const mark = await read()
        if (mark === undefined) continue
        if (seen !== undefined && mark !== seen) {
          this.generation++
          for (const state of this.watches) state.wake?.(true)
        }
        seen = mark
      }
    } finally {
      // In the same step as the loop's last check, so that a watch begun after it starts a new loop.
      this.polling = undefined
    }
  }
}

interface WatchState {
  /** The generation this watch last woke for (or began at). */
  since: number
  /** Set while the watch's long poll is waiting: `true` for a new generation, `false` to stop. */
  wake: ((woken: boolean) => void) | undefined
}
