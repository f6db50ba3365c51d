import { randomUUID } from 'node:crypto'
import { hostname } from 'node:os'
import type { FastifyPluginAsync } from 'fastify'
import fp from 'fastify-plugin'
import type { Config } from '../config.js'
import { installDoorbell, notifyingDoorbell } from '../outbox/doorbell.js'
import { createOutboxMetrics } from '../outbox/metrics.js'
import { createSender } from '../outbox/sender.js'
import type { TargetPolicy } from '../outbox/targets.js'
import { OutboxWorker } from '../outbox/worker.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** The webhook delivery worker; running unless OUTBOX_WORKER=false (`drainOnce` works either way). */
    outbox: OutboxWorker
  }
}

/**
 * Delivers webhook events from the outbox. Starts with the server; at shutdown it stops claiming
 * first (preClose), and the database closes only after in-flight attempts have ended (onClose,
 * registered after the database plugin, so it runs before the pool closes).
 */
const outbox: FastifyPluginAsync<{ config: Config; targets: TargetPolicy }> = async (
  app,
  { config, targets },
) => {
  const worker = new OutboxWorker({
    db: app.db,
    listen: app.database.listen,
    sender: createSender({
      connectTimeoutMs: config.WEBHOOK_CONNECT_TIMEOUT_MS,
      timeoutMs: config.WEBHOOK_TIMEOUT_MS,
      policy: targets,
    }),
    secretBox: app.secretBox,
    metrics: createOutboxMetrics(app.metrics.client, app.db),
    log: app.log,
    instanceId: `${hostname()}/${process.pid}/${randomUUID().slice(0, 8)}`,
    retrySchedule: config.webhookRetrySeconds,
    leaseSeconds: config.WEBHOOK_LEASE_SECONDS,
    pollIntervalMs: config.OUTBOX_POLL_INTERVAL_MS,
    concurrency: config.WEBHOOK_CONCURRENCY,
    hostConcurrency: config.WEBHOOK_HOST_CONCURRENCY,
    deactivateAfterSeconds: config.WEBHOOK_DEACTIVATE_AFTER_SECONDS,
    attemptTimeoutMs: config.WEBHOOK_TIMEOUT_MS,
    releaseLeasesAtStart: app.database.kind === 'pglite',
    pinClaimPlan: app.database.kind === 'pglite',
  })
  app.decorate('outbox', worker)
  // The embedded database has one process, hence no other worker to tell.
  const notifyOthers =
    app.database.kind === 'postgres'
      ? notifyingDoorbell(app.db, (error) =>
          app.log.warn({ err: { message: (error as Error).message } }, 'could not notify the outbox workers'),
        )
      : undefined
  installDoorbell(app.db, (webhookIds) =>
    worker.isRunning ? worker.wakeFor(webhookIds) : notifyOthers?.(webhookIds),
  )

  if (config.OUTBOX_WORKER) app.addHook('onReady', () => worker.start())
  let stopping: Promise<void> | undefined
  app.addHook('preClose', async () => {
    stopping = worker.stop()
  })
  app.addHook('onClose', async () => {
    await (stopping ?? worker.stop())
  })
}

export default fp(outbox, { name: 'outbox', dependencies: ['database', 'metrics', 'encryption'] })
