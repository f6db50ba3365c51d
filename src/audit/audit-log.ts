import type { Kysely } from 'kysely'
import type { Database } from '../../db/database.js'
import type { NewAuditRow } from '../../db/tables/audit-log.js'

export interface AuditLogOptions {
  flushIntervalMs: number
  onFlushError: (error: unknown, pending: number) => void
}

// Writing in batches keeps the insert off every request's path; the cap bounds memory if the
// database stays down, and anything dropped past it is reported through onFlushError.
const BATCH_SIZE = 500
const MAX_PENDING = 50_000
// Shutdown has a 15 s grace period (server.ts); three tries a second apart stay well inside it.
const CLOSE_ATTEMPTS = 3
const CLOSE_RETRY_DELAY_MS = 1000

/** Buffers audit records in memory and writes them in batches; `close()` writes what is left. */
export class AuditLog {
  private pending: NewAuditRow[] = []
  private flushing: Promise<void> | undefined
  private readonly timer: NodeJS.Timeout
  flushed = 0
  failed = 0
  dropped = 0

  constructor(
    private readonly db: Kysely<Database>,
    private readonly options: AuditLogOptions,
  ) {
    this.timer = setInterval(() => void this.flush(), options.flushIntervalMs)
    this.timer.unref()
  }

  get buffered(): number {
    return this.pending.length
  }

  record(row: NewAuditRow): void {
    if (this.pending.length >= MAX_PENDING) {
      this.pending.shift()
      this.dropped += 1
    }
    this.pending.push(row)
    if (this.pending.length >= BATCH_SIZE) void this.flush()
  }

  /** Writes everything buffered so far; concurrent calls share one run. */
  flush(): Promise<void> {
    this.flushing ??= this.writeAll().finally(() => {
      this.flushing = undefined
    })
    return this.flushing
  }

  /**
   * Stops the timer and writes what is left. A write that fails at shutdown (a database restarting)
   * is retried a few times before the records are given up, since nothing would write them later.
   */
  async close(): Promise<void> {
    clearInterval(this.timer)
    for (let attempt = 0; attempt < CLOSE_ATTEMPTS; attempt += 1) {
      await this.flush()
      if (this.pending.length === 0) return
      await new Promise((resolve) => setTimeout(resolve, CLOSE_RETRY_DELAY_MS))
    }
  }

  private async writeAll(): Promise<void> {
    while (this.pending.length > 0) {
      const batch = this.pending.slice(0, BATCH_SIZE)
      try {
        await this.db.insertInto('audit_log').values(batch).execute()
      } catch (error) {
        this.failed += 1
        this.options.onFlushError(error, this.pending.length)
        return
      }
      this.pending.splice(0, batch.length)
      this.flushed += batch.length
    }
  }
}
