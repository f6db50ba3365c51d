import type { FastifyPluginAsync } from 'fastify'
import fp from 'fastify-plugin'
import type { Db } from '../../../../db/database.js'
import { newLeaseOwner } from '../../../../db/leases.js'
import { requestsInFlight } from '../../../http/requests-in-flight.js'
import type { FhirResourceType } from '../resource-type.js'
import { type ExportFileStore, ExportWorker, type ExportWorkerOptions } from './worker.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** The FHIR bulk export worker; running unless BULK_EXPORT_WORKER=false (`drainOnce` works either way). */
    bulkExports: ExportWorker
  }
}

interface BulkExportWorkerOptions {
  run: boolean
  /** The exports' own database handle, and how to close it (undefined: it is the API's). */
  db: Db
  /** Read replicas, if configured: exports read them once they have replayed far enough. */
  replicas: ExportWorkerOptions['replicas']
  close: (() => Promise<void>) | undefined
  store: ExportFileStore
  types: readonly FhirResourceType[]
  embedded: boolean
  settings: {
    fileMaxBytes: number
    retentionHours: number
    leaseSeconds: number
    perOrganization: number
    pollIntervalMs: number
  }
}

// Two jobs at a time per instance: exports are long and the API comes first.
const JOBS_PER_INSTANCE = 2
const SNAPSHOT_WAIT_MS = 60_000

/**
 * Runs bulk export jobs in the background. Like the outbox worker: it stops claiming first at
 * shutdown (preClose), and its connections close after the jobs under way have stopped at a file
 * boundary (onClose, registered after the database plugin, so it runs before the pool closes).
 */
const bulkExportWorker: FastifyPluginAsync<BulkExportWorkerOptions> = async (app, options) => {
  // Requests being served, so that exports give way to them; registered before the routes.
  const serving = requestsInFlight(app)
  const worker = new ExportWorker({
    db: options.db,
    replicas: options.replicas,
    store: options.store,
    types: options.types,
    log: app.log,
    leaseOwner: newLeaseOwner(),
    ...options.settings,
    concurrency: JOBS_PER_INSTANCE,
    snapshotWaitMs: SNAPSHOT_WAIT_MS,
    releaseLeasesAtStart: options.embedded,
    busy: () => serving() > 0,
  })
  app.decorate('bulkExports', worker)
  if (options.run) app.addHook('onReady', () => worker.start())
  let stopping: Promise<void> | undefined
  app.addHook('preClose', async () => {
    stopping = worker.stop()
  })
  app.addHook('onClose', async () => {
    await (stopping ?? worker.stop())
    await options.close?.()
  })
}

export default fp(bulkExportWorker, { name: 'bulk-export-worker', dependencies: ['database'] })
