import type { FastifyBaseLogger } from 'fastify'
import type { Db } from '../../../../db/database.js'
import { releaseAllLeases, releaseLeases } from '../../../../db/leases.js'
import type { ReadReplicas } from '../../../../db/replicas.js'
import type { BulkExportPosition } from '../../../../db/tables/bulk-exports.js'
import type { ByteRange } from '../../../lib/byte-range.js'
import { operationOutcome } from '../operation-outcome.js'
import type { FhirResourceType, ReadScope } from '../resource-type.js'
import type { SearchQuery } from '../search-params.js'
import { providerOfGroup } from './groups.js'
import {
  claimExport,
  deleteExport,
  type ExportJob,
  expiredExports,
  finishExport,
  recordFile,
  renewLease,
  setTransactionTime,
} from './jobs.js'
import { filterQuery } from './parameters.js'
import { transactionTime } from './transaction-time.js'

/** Where export files are kept: the document store (files under DATA_DIR, or S3). */
export interface ExportFileStore {
  write(key: string, source: AsyncIterable<Buffer>): Promise<{ size: number }>
  read(key: string, range?: ByteRange): Promise<NodeJS.ReadableStream>
  remove(key: string): Promise<void>
}

export interface ExportWorkerOptions {
  /** The export's own connections (a pool of their own on PostgreSQL). */
  db: Db
  /** Read replicas: an export reads one that has replayed every write before its transactionTime. */
  replicas?: Pick<ReadReplicas, 'readerFor' | 'writePosition'>
  store: ExportFileStore
  types: readonly FhirResourceType[]
  log: FastifyBaseLogger
  /** This worker's id in the leases it takes (db/leases.ts). */
  leaseOwner: string
  leaseSeconds: number
  fileMaxBytes: number
  retentionHours: number
  perOrganization: number
  /** Jobs this instance runs at once. */
  concurrency: number
  pollIntervalMs: number
  /** How long to wait for transactions begun before an export's transactionTime. */
  snapshotWaitMs: number
  /** Only one process can open an embedded database: any lease found at start is stale. */
  releaseLeasesAtStart: boolean
  /** Whether the process is serving API requests now: the export then gives way to them. */
  busy: () => boolean
}

/** While the API is busy, an export takes at most this share of the process's time. */
const SHARE_WHEN_BUSY = 0.1

const PAGE_SIZE = 250
const BY_ID = { name: '_id', descending: false }
const ERROR_TYPE = 'OperationOutcome'

const exportFileKey = (exportId: string, sequence: number) => `bulk-export-${exportId}-${sequence}`

/**
 * Runs FHIR bulk exports in the background: claims one job at a time per slot (a lease, like
 * webhook deliveries), writes each type's resources as NDJSON files, and records each finished
 * file together with the job's new position, so that a job resumed by any instance after a crash
 * starts again from its last finished file, with nothing missing and nothing twice.
 */
export class ExportWorker {
  private running = false
  private stopping = false
  /**
   * The jobs running here, by id: a lease of one that lapses while it runs must not let this
   * instance start it a second time.
   */
  private readonly active = new Map<string, Promise<void>>()
  private timer: NodeJS.Timeout | undefined
  /** The look for work under way, if any: stopping waits for it, or it would query a closed pool. */
  private polling: Promise<void> | undefined
  private readonly byName: Map<string, FhirResourceType>

  constructor(private readonly options: ExportWorkerOptions) {
    this.byName = new Map(options.types.map((type) => [type.type, type]))
  }

  async start(): Promise<void> {
    if (this.options.releaseLeasesAtStart) await releaseAllLeases(this.options.db, 'bulk_exports')
    this.running = true
    this.schedule(0)
  }

  /** Stops claiming and waits for the jobs under way to reach their next file boundary. */
  async stop(): Promise<void> {
    this.running = false
    this.stopping = true
    if (this.timer) clearTimeout(this.timer)
    await this.polling
    await Promise.allSettled([...this.active.values()])
  }

  /** Looks for work now (after a kick-off) rather than at the next poll. */
  wake(): void {
    if (this.running) this.schedule(0)
  }

  /** Runs every claimable job to its end and purges expired ones; for tests and scripts. */
  async drainOnce(): Promise<number> {
    await this.purgeExpired()
    let ran = 0
    for (;;) {
      const job = await this.claim()
      if (!job) return ran
      await this.run(job)
      ran += 1
    }
  }

  private schedule(delayMs: number) {
    if (this.timer) clearTimeout(this.timer)
    this.timer = setTimeout(() => {
      const polling = this.poll().finally(() => {
        if (this.polling === polling) this.polling = undefined
      })
      this.polling = polling
    }, delayMs)
    this.timer.unref()
  }

  private async poll() {
    try {
      await this.purgeExpired()
      while (this.running && this.active.size < this.options.concurrency) {
        const job = await this.claim()
        if (!job) break
        const run = this.run(job).finally(() => {
          this.active.delete(job.id)
          this.wake()
        })
        this.active.set(job.id, run)
      }
    } catch (error) {
      this.options.log.error({ err: { message: (error as Error).message } }, 'bulk export poll failed')
    }
    if (this.running) this.schedule(this.options.pollIntervalMs)
  }

  private claim() {
    const { db, leaseOwner, leaseSeconds, perOrganization } = this.options
    return claimExport(db, leaseOwner, leaseSeconds, perOrganization, [...this.active.keys()])
  }

  private async purgeExpired() {
    const { db, store } = this.options
    for (const expired of await expiredExports(db, 20)) {
      const keys = await db
        .transaction()
        .execute((trx) => deleteExport(trx, expired.organization_id, expired.id))
      await Promise.all(keys.map((key) => store.remove(key)))
    }
  }

  /** Runs one claimed job until it is done, cancelled, taken over or the worker stops. */
  private async run(job: ExportJob): Promise<void> {
    const { db, log, retentionHours } = this.options
    const lease = this.leaseOf(job)
    try {
      const at = job.transaction_time ?? (await transactionTime(db, this.options.snapshotWaitMs))
      if (!job.transaction_time && !(await setTransactionTime(db, lease, at))) return
      // Every transaction begun before `at` has ended, so a replica that has replayed the primary's
      // position now holds all that the export may contain.
      const readAfter = await this.options.replicas?.writePosition()
      let position = job.position
      while (position.typeIndex < job.types.length) {
        // Stopping: the job is left at its last finished file, for this or another instance to resume.
        if (this.stopping) return await releaseLeases(db, 'bulk_exports', lease.leaseOwner, [job.id])
        const next = await this.writeFile(job, at, readAfter, position)
        if (!next) return
        position = next
      }
      if (job.issues.length > 0 && !(await this.writeIssues(job, position))) return
      await finishExport(db, lease, { status: 'completed', retentionHours })
    } catch (error) {
      log.error({ err: { message: (error as Error).message }, export: job.id }, 'bulk export failed')
      await finishExport(db, lease, {
        status: 'failed',
        error: 'The export failed on the server; start a new one',
        retentionHours,
      }).catch(() => {})
    }
  }

  /** The lease this worker holds on `job`, which every write to the job names. */
  private leaseOf(job: ExportJob) {
    const { leaseOwner, leaseSeconds } = this.options
    return { id: job.id, leaseOwner, leaseSeconds }
  }

  /**
   * Between pages: the API's requests come first. While any is being served, the export waits long
   * enough after each page to keep to its share of the time; otherwise it only lets queued I/O run.
   */
  private async pace(workMs: number): Promise<void> {
    const wait = this.options.busy() ? (workMs * (1 - SHARE_WHEN_BUSY)) / SHARE_WHEN_BUSY : 0
    await new Promise((resolve) => (wait > 0 ? setTimeout(resolve, wait) : setImmediate(resolve)))
  }

  /** Whose records, and which of them: the export's level, the type's filter, the time window. */
  private scopeOf(job: ExportJob): ReadScope {
    const actor = { userId: job.requested_by, organizationId: job.organization_id }
    const provider = job.group_id ? providerOfGroup(job.group_id) : undefined
    return { actor, patient: undefined, ...(provider === undefined ? {} : { providerPatients: provider }) }
  }

  private queryOf(job: ExportJob, type: string, at: Date): SearchQuery {
    const query = filterQuery(job.type_filters[type])
    const window = [`lt${at.toISOString()}`, ...(job.since ? [`ge${job.since.toISOString()}`] : [])]
    return { ...query, _lastUpdated: [...(query._lastUpdated ?? []), ...window] }
  }

  /**
   * Writes the next file of the export from `position` and records it; the position after it, or
   * undefined when the export is no longer this instance's to write (cancelled, or taken over).
   */
  private async writeFile(
    job: ExportJob,
    at: Date,
    readAfter: bigint | undefined,
    position: BulkExportPosition,
  ): Promise<BulkExportPosition | undefined> {
    const { db, replicas, store, fileMaxBytes, leaseSeconds } = this.options
    const lease = this.leaseOf(job)
    // Chosen for each page: a replica that falls behind or fails mid-export leaves the rotation.
    const reader = () => (replicas && readAfter !== undefined ? replicas.readerFor(readAfter) : db)
    const typeName = job.types[position.typeIndex] as string
    const served = this.byName.get(typeName)
    if (!served) throw new Error(`The export names a type no longer served: ${typeName}`)
    const type: FhirResourceType = served
    const scope = this.scopeOf(job)
    const query = this.queryOf(job, typeName, at)
    const key = exportFileKey(job.id, position.sequence)
    let count = 0
    let last = position.after
    let typeDone = false

    const renewEveryMs = (leaseSeconds * 1000) / 3
    let renewedAt = Date.now()

    const pace = (workMs: number) => this.pace(workMs)

    // One chunk per page of resources: lines are many and small, chunks keep the writes few.
    async function* chunks(): AsyncGenerator<Buffer> {
      let bytes = 0
      for (;;) {
        const pageStarted = performance.now()
        const page = await type.search(reader(), scope, query, {
          after: { id: last },
          size: PAGE_SIZE,
          order: BY_ID,
        })
        const lines: string[] = []
        let full = false
        for (const resource of page.resources) {
          const line = `${JSON.stringify(resource)}\n`
          const size = Buffer.byteLength(line)
          if (count > 0 && bytes + size > fileMaxBytes) {
            full = true
            break
          }
          lines.push(line)
          bytes += size
          count += 1
          last = Number(resource.id)
        }
        if (lines.length > 0) yield Buffer.from(lines.join(''))
        if (full) return
        await pace(performance.now() - pageStarted)
        if (!page.next) {
          typeDone = true
          return
        }
        if (Date.now() - renewedAt > renewEveryMs) {
          if (!(await renewLease(db, lease))) return
          renewedAt = Date.now()
        }
      }
    }

    // A file left half-written by a crash has the same key; it is replaced.
    await store.remove(key)
    const stored = await store.write(key, chunks())
    const file =
      count > 0 ? { sequence: position.sequence, type: typeName, key, count, size: stored.size } : undefined
    if (!file) await store.remove(key)
    const next = typeDone
      ? { typeIndex: position.typeIndex + 1, after: 0, sequence: position.sequence + (file ? 1 : 0) }
      : { typeIndex: position.typeIndex, after: last, sequence: position.sequence + 1 }
    if (!typeDone && count === 0) return undefined // the lease was lost before anything was written
    if (await recordFile(db, lease, file, next)) return next
    if (file) await store.remove(key)
    return undefined
  }

  /** The OperationOutcome file: what the export left out, and why. */
  private async writeIssues(job: ExportJob, position: BulkExportPosition): Promise<boolean> {
    const { db, store } = this.options
    const key = exportFileKey(job.id, position.sequence)
    const lines = job.issues.map((issue) => {
      const outcome = operationOutcome(403, issue)
      for (const entry of outcome.issue ?? []) entry.severity = 'warning'
      return Buffer.from(`${JSON.stringify(outcome)}\n`)
    })
    await store.remove(key)
    const stored = await store.write(
      key,
      (async function* () {
        yield* lines
      })(),
    )
    const file = {
      sequence: position.sequence,
      type: ERROR_TYPE,
      key,
      count: lines.length,
      size: stored.size,
    }
    const next = { ...position, sequence: position.sequence + 1 }
    if (await recordFile(db, this.leaseOf(job), file, next)) return true
    await store.remove(key)
    return false
  }
}
