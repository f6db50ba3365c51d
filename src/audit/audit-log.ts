import { sql } from 'kysely'
import { acrossOrganizations } from '../../db/across-organizations.js'
import { integerArrayLiteral, textArrayLiteral } from '../../db/array-literal.js'
import type { Db } from '../../db/database.js'
import { prepared } from '../../db/prepared-statements.js'
import type { NewAuditRow } from '../../db/tables/audit-log.js'

export interface AuditLogOptions {
  /** How often records that could not be written are tried again. */
  flushIntervalMs: number
  onFlushError: (error: unknown, pending: number) => void
}

// Up to 100 records per insert: a smaller batch holds a database core for less time, which shows in
// the by-id read's p99 (docs/performance-log.md). The cap bounds memory if the database stays down.
export const AUDIT_BATCH_SIZE = 100
// How long an insert may wait for the calls expected to join it. A commit is quick, so without the
// wait calls under load shared an insert a few at a time, and the statements and commits cost much
// of the by-id read's throughput (docs/performance-log.md).
const AUDIT_GATHER_MS = 2
const MAX_PENDING = 50_000
// Shutdown has a 15 s grace period (start.ts); three tries a second apart stay well inside it.
const CLOSE_ATTEMPTS = 3
const CLOSE_RETRY_DELAY_MS = 1000

/**
 * Writes a batch as one array parameter per column: building and binding a statement of 500 rows ×
 * 10 values took a large share of the service's time under load. Arrays cost the database less to
 * read than the same rows as one JSON document, and less to build here, the more so as literals
 * joined in one go (db/array-literal.ts). A row's resource ids travel as array text
 * (`{1,2}`), since PostgreSQL has no array of arrays of any length.
 */
export async function insertAuditRows(db: Db, rows: NewAuditRow[]): Promise<void> {
  const text = (value: (row: NewAuditRow) => string) => textArrayLiteral(rows.map(value))
  const integers = (value: (row: NewAuditRow) => number | null | undefined) =>
    integerArrayLiteral(rows.map((row) => value(row) ?? null))
  await prepared(sql`${acrossOrganizations('audit batches')}
    insert into audit_log (occurred_at, organization_id, user_id, action, resource_type, resource_ids,
      patient_id, outcome, status_code, request_id)
    select occurred_at, organization_id, user_id, action, resource_type, resource_ids::integer[],
      patient_id, outcome, status_code, request_id
    from unnest(
      ${text((row) => row.occurred_at.toISOString())}::timestamptz[],
      ${integers((row) => row.organization_id)}::integer[],
      ${integers((row) => row.user_id)}::integer[],
      ${text((row) => row.action)}::text[],
      ${text((row) => row.resource_type)}::text[],
      ${text((row) => integerArrayLiteral(row.resource_ids ?? []))}::text[],
      ${integers((row) => row.patient_id)}::integer[],
      ${text((row) => row.outcome)}::text[],
      ${integers((row) => row.status_code)}::integer[],
      ${text((row) => row.request_id)}::text[]
    ) as batch(occurred_at, organization_id, user_id, action, resource_type, resource_ids, patient_id,
      outcome, status_code, request_id)
  `).execute(db)
}

/** Records written by one insert, and the calls waiting for it. */
interface Batch {
  rows: NewAuditRow[]
  /** When its first record came (performance.now()): it waits for expected calls until AUDIT_GATHER_MS later. */
  openedAt: number
  /** The rows kept for another try if the insert fails (records of calls that failed anyway). */
  kept: NewAuditRow[]
  written: Promise<void>
  settle: (error?: unknown) => void
}

function newBatch(): Batch {
  let settle: (error?: unknown) => void = () => {}
  const written = new Promise<void>((resolve, reject) => {
    settle = (error) => (error === undefined ? resolve() : reject(error))
  })
  // A batch of retried records has no caller waiting.
  written.catch(() => {})
  return { rows: [], openedAt: performance.now(), kept: [], written, settle }
}

/**
 * Writes audit records by group commit: a call's records go into the next insert, and the call
 * waits for that insert to commit; calls arriving while one insert runs share the next. So a
 * record is in the database before its call is answered, at the cost of about one insert's time.
 * Calls announced with `expect()` and not yet written hold the next insert back for up to
 * AUDIT_GATHER_MS, so that under load one commit serves many calls; alone, a call waits for none.
 */
export class AuditLog {
  private readonly queue: Batch[] = []
  private queued = 0
  /** Records of failed calls whose insert failed: written again by the timer and at close. */
  private retry: NewAuditRow[] = []
  private writing: Promise<void> | undefined
  private readonly timer: NodeJS.Timeout
  /** Calls under way that will write here: the next insert may wait for them. */
  private expected = 0
  private gathering: NodeJS.Timeout | undefined
  flushed = 0
  /** Successful inserts: `flushed / inserts` is how many records a commit served. */
  inserts = 0
  failed = 0
  dropped = 0

  constructor(
    private readonly db: Db,
    private readonly options: AuditLogOptions,
  ) {
    this.timer = setInterval(() => void this.flush(), options.flushIntervalMs)
    this.timer.unref()
  }

  /** Calls announced and not yet written. */
  get expecting(): number {
    return this.expected
  }

  get buffered(): number {
    return this.queued + this.retry.length
  }

  /**
   * Announces a call that will write its records here; the call ends the announcement, once it has
   * written or when it will not (the returned function, which may be called more than once).
   */
  expect(): () => void {
    this.expected += 1
    let ended = false
    return () => {
      if (ended) return
      ended = true
      this.expected -= 1
      if (this.expected === 0) this.startWriting()
    }
  }

  /**
   * Resolves once `rows` are committed; rejects if their insert fails (or too many records wait
   * already), and then the caller must not report success. `keepOnFailure`, for the records of a
   * call that failed anyway: they are kept and written later rather than lost.
   */
  write(rows: NewAuditRow[], { keepOnFailure = false } = {}): Promise<void> {
    if (this.buffered + rows.length > MAX_PENDING) {
      if (!keepOnFailure) return Promise.reject(new Error('too many audit records are waiting'))
      this.keep(rows)
      return Promise.reject(new Error('audit records kept for a later try'))
    }
    let batch = this.queue.at(-1)
    if (!batch || batch.rows.length >= AUDIT_BATCH_SIZE) {
      batch = newBatch()
      this.queue.push(batch)
    }
    batch.rows.push(...rows)
    if (keepOnFailure) batch.kept.push(...rows)
    this.queued += rows.length
    this.startWriting()
    return batch.written
  }

  /** Writes everything waiting, retried records included (the timer's and shutdown's job). */
  async flush(): Promise<void> {
    const retry = this.retry
    this.retry = []
    for (let start = 0; start < retry.length; start += AUDIT_BATCH_SIZE) {
      const rows = retry.slice(start, start + AUDIT_BATCH_SIZE)
      this.queue.push({ ...newBatch(), rows, kept: rows })
      this.queued += rows.length
    }
    this.startWriting({ now: true })
    while (this.writing) await this.writing
  }

  /**
   * Stops the timer and writes what is left. A write that fails at shutdown (a database restarting)
   * is retried a few times before the records are given up, since nothing would write them later.
   */
  async close(): Promise<void> {
    clearInterval(this.timer)
    clearTimeout(this.gathering)
    for (let attempt = 0; attempt < CLOSE_ATTEMPTS; attempt += 1) {
      await this.flush()
      if (this.buffered === 0) return
      await new Promise((resolve) => setTimeout(resolve, CLOSE_RETRY_DELAY_MS))
    }
  }

  /** One insert at a time: whatever arrives meanwhile goes into the next. */
  private startWriting({ now = false } = {}): void {
    if (this.writing || this.queue.length === 0 || (!now && this.gather())) return
    this.writing = this.writeQueued().finally(() => {
      this.writing = undefined
      this.startWriting()
    })
  }

  /** Whether the next batch waits for expected calls (then a timer starts writing when it is due). */
  private gather(): boolean {
    const next = this.queue[0] as Batch
    const wait = next.openedAt + AUDIT_GATHER_MS - performance.now()
    if (this.expected === 0 || next.rows.length >= AUDIT_BATCH_SIZE || wait <= 0) {
      clearTimeout(this.gathering)
      this.gathering = undefined
      return false
    }
    this.gathering ??= setTimeout(() => {
      this.gathering = undefined
      this.startWriting({ now: true })
    }, wait)
    return true
  }

  private async writeQueued(): Promise<void> {
    // A batch's rows count as queued until its insert ends, so that `buffered` (and close) sees them.
    for (let batch = this.queue.shift(); batch; batch = this.queue.shift()) {
      try {
        await insertAuditRows(this.db, batch.rows)
        this.queued -= batch.rows.length
        this.flushed += batch.rows.length
        this.inserts += 1
        batch.settle()
      } catch (error) {
        this.queued -= batch.rows.length
        this.failed += 1
        this.keep(batch.kept)
        this.options.onFlushError(error, this.buffered)
        batch.settle(error)
      }
    }
  }

  /** Keeps records for another try, dropping the oldest past the cap. */
  private keep(rows: NewAuditRow[]): void {
    this.retry.push(...rows)
    const excess = this.buffered - MAX_PENDING
    if (excess > 0) {
      this.retry.splice(0, excess)
      this.dropped += excess
    }
  }
}
