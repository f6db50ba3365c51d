import type { FastifyPluginAsync } from 'fastify'
import fp from 'fastify-plugin'
import { newLeaseOwner } from '../../db/leases.js'
import type { WebhookSettings } from '../config/webhooks.js'
import { createOutboxMetrics } from '../outbox/delivery-metrics.js'
import { OutboxWorker } from '../outbox/delivery-worker.js'
import { installDoorbell, notifyingDoorbell } from '../outbox/doorbell.js'
import { createSender } from '../outbox/sender.js'
import type { TargetPolicy } from '../outbox/targets.js'

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
const outbox: FastifyPluginAsync<{ settings: WebhookSettings; targets: TargetPolicy }> = async (
  app,
  { settings, targets },
) => {
  const worker = new OutboxWorker({
    db: app.db,
    listen: app.database.listen,
    sender: createSender({
      connectTimeoutMs: settings.connectTimeoutMs,
      timeoutMs: settings.timeoutMs,
      policy: targets,
    }),
    secretBox: app.secretBox,
    metrics: createOutboxMetrics(app.metrics.client, app.db),
    log: app.log,
    leaseOwner: newLeaseOwner(),
    leaseSeconds: settings.leaseSeconds,
    retrySchedule: settings.retrySeconds,
    pollIntervalMs: settings.pollIntervalMs,
    concurrency: settings.concurrency,
    hostConcurrency: settings.hostConcurrency,
    deactivateAfterSeconds: settings.deactivateAfterSeconds,
    attemptTimeoutMs: settings.timeoutMs,
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

  if (settings.worker) app.addHook('onReady', () => worker.start())
  let stopping: Promise<void> | undefined
  app.addHook('preClose', async () => {
    stopping = worker.stop()
  })
  app.addHook('onClose', async () => {
    await (stopping ?? worker.stop())
  })
}

export default fp(outbox, { name: 'outbox', dependencies: ['database', 'metrics', 'encryption'] })
