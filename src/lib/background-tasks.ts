/**
 * Work a request starts without waiting for it (so its duration cannot be observed by the caller).
 * Failures go to `onError`; `settled()` waits for everything started so far, which shutdown uses
 * so that no task is cut off, and tests use to observe the outcome.
 */
export class BackgroundTasks {
  private readonly running = new Set<Promise<void>>()

  constructor(private readonly onError: (name: string, error: unknown) => void) {}

  /** Starts `task` on a later turn of the event loop, so the response of the request goes out first. */
  run(name: string, task: () => Promise<void>): void {
    const promise: Promise<void> = new Promise<void>((resolve) => setImmediate(resolve))
      .then(task)
      .catch((error: unknown) => this.onError(name, error))
      .finally(() => this.running.delete(promise))
    this.running.add(promise)
  }

  async settled(): Promise<void> {
    while (this.running.size > 0) await Promise.all([...this.running])
  }
}
