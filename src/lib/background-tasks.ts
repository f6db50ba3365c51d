import { AsyncLocalStorage } from 'node:async_hooks'

/**
 * Work a request starts without waiting for it (so its duration cannot be observed by the caller).
 * Failures go to `onError`; `settled()` waits for everything started so far, which shutdown uses
 * so that no task is cut off, and tests use to observe the outcome.
 */
export class BackgroundTasks {
  private readonly running = new Set<Promise<void>>()
  // The context of whoever made the tasks (the app, at start-up): a task runs in it rather than in
  // the request's, so that nothing it does is taken for the request's own (its audit record, say).
  private readonly outsideRequests = AsyncLocalStorage.snapshot()

  constructor(private readonly onError: (name: string, error: unknown) => void) {}

  /** Starts `task` on a later turn of the event loop, outside the request that started it. */
  run(name: string, task: () => Promise<void>): void {
    const promise: Promise<void> = new Promise<void>((resolve) => setImmediate(resolve))
      .then(() => this.outsideRequests(task))
      .catch((error: unknown) => this.onError(name, error))
      .finally(() => this.running.delete(promise))
    this.running.add(promise)
  }

  async settled(): Promise<void> {
    while (this.running.size > 0) await Promise.all([...this.running])
  }
}
