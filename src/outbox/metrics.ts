import type { Kysely } from 'kysely'
import type client from 'prom-client'
import type { Database } from '../../db/database.js'
import { LATENCY_BUCKETS, METRIC } from '../lib/metrics.js'
import { backlog } from './deliveries.js'

export type AttemptOutcome = 'succeeded' | 'retrying' | 'failed'

/** Delivery counters and latency of this instance; backlog gauges read the shared table. */
export function createOutboxMetrics(prometheus: typeof client, db: Kysely<Database>) {
  const deliveries = new prometheus.Counter({
    name: METRIC.webhookDeliveries,
    help: 'Webhook delivery attempts by event and outcome (succeeded, retrying: failed with a retry due, failed: retries exhausted)',
    labelNames: ['event', 'outcome'],
  })
  const duration = new prometheus.Histogram({
    name: METRIC.webhookAttemptDuration,
    help: 'Duration of webhook delivery attempts, from sending to the end of the answer',
    labelNames: ['outcome'],
    buckets: LATENCY_BUCKETS,
  })

  // The gauges come from one query per scrape.
  let reading: Promise<Awaited<ReturnType<typeof backlog>> | undefined> | undefined
  const read = () => {
    reading ??= backlog(db)
      .catch(() => undefined)
      .finally(() => {
        reading = undefined
      })
    return reading
  }
  new prometheus.Gauge({
    name: METRIC.outboxBacklog,
    help: 'Webhook deliveries waiting to be sent (all instances)',
    async collect() {
      const current = await read()
      if (current) this.set(current.pending)
    },
  })
  new prometheus.Gauge({
    name: METRIC.outboxOldestPendingAge,
    help: 'Age of the oldest webhook delivery waiting to be sent (0 when none)',
    async collect() {
      const current = await read()
      if (current) this.set(current.oldestAgeSeconds)
    },
  })

  new prometheus.Gauge({
    name: METRIC.webhooksDeactivated,
    help: 'Webhooks deactivated because their deliveries kept failing (all organizations)',
    async collect() {
      const current = await read()
      if (current) this.set(current.deactivated)
    },
  })

  return {
    attempted(event: string, outcome: AttemptOutcome, seconds: number) {
      deliveries.inc({ event, outcome })
      duration.observe({ outcome }, seconds)
    },
  }
}

export type OutboxMetrics = ReturnType<typeof createOutboxMetrics>
