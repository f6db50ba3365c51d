import type client from 'prom-client'
import type { Db } from '../../db/database.js'
import { LATENCY_BUCKETS, METRIC } from '../lib/service-metrics.js'
import { backlog } from './deliveries.js'

type Backlog = Awaited<ReturnType<typeof backlog>>

/** The longest a scrape waits on the database for the backlog figures. */
const SCRAPE_WAIT_MS = 500

export type AttemptOutcome = 'succeeded' | 'retrying' | 'failed'

/** Delivery counters and latency of this instance; backlog gauges read the shared table. */
export function createOutboxMetrics(prometheus: typeof client, db: Db) {
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

  // The gauges come from one query per scrape, which a scrape waits on for at most SCRAPE_WAIT_MS
  // from its start: a database that does not answer must not hang the metrics endpoint. Past that
  // the gauges keep the last figures read, and the read-age gauge tells how old they are.
  let reading: Promise<void> | undefined
  let readingSince = 0
  let last: Backlog | undefined
  let lastReadAt: number | undefined
  const read = async () => {
    if (!reading) {
      readingSince = Date.now()
      reading = backlog(db)
        .then((figures) => {
          last = figures
          lastReadAt = Date.now()
        })
        .catch(() => {})
        .finally(() => {
          reading = undefined
        })
    }
    const waitMs = Math.max(0, readingSince + SCRAPE_WAIT_MS - Date.now())
    await Promise.race([reading, new Promise((resolve) => setTimeout(resolve, waitMs).unref())])
    return last
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
  new prometheus.Gauge({
    name: METRIC.outboxBacklogReadAge,
    help: 'How old the figures of the backlog gauges are: about 0 when read for this scrape; more when the database did not answer in time and they are stale (+Inf before the first read)',
    async collect() {
      await read()
      this.set(lastReadAt === undefined ? Number.POSITIVE_INFINITY : (Date.now() - lastReadAt) / 1000)
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
