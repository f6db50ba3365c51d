import type { Kysely } from 'kysely'
import type client from 'prom-client'
import type { Database } from '../../db/database.js'
import { backlog } from './deliveries.js'

export type AttemptOutcome = 'succeeded' | 'retrying' | 'failed'

/** Delivery counters and latency of this instance; backlog gauges read the shared table. */
export function createOutboxMetrics(prometheus: typeof client, db: Kysely<Database>) {
  const deliveries = new prometheus.Counter({
    name: 'ehr_webhook_deliveries_total',
    help: 'Webhook delivery attempts by event and outcome (succeeded, retrying: failed with a retry due, failed: retries exhausted)',
    labelNames: ['event', 'outcome'],
  })
  const duration = new prometheus.Histogram({
    name: 'ehr_webhook_attempt_duration_seconds',
    help: 'Duration of webhook delivery attempts, from sending to the end of the answer',
    labelNames: ['outcome'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  })

  // Both gauges come from one query per scrape.
  let reading: Promise<{ pending: number; oldestAgeSeconds: number } | undefined> | undefined
  const read = () => {
    reading ??= backlog(db)
      .catch(() => undefined)
      .finally(() => {
        reading = undefined
      })
    return reading
  }
  new prometheus.Gauge({
    name: 'ehr_outbox_backlog',
    help: 'Webhook deliveries waiting to be sent (all instances)',
    async collect() {
      const current = await read()
      if (current) this.set(current.pending)
    },
  })
  new prometheus.Gauge({
    name: 'ehr_outbox_oldest_pending_age_seconds',
    help: 'Age of the oldest webhook delivery waiting to be sent (0 when none)',
    async collect() {
      const current = await read()
      if (current) this.set(current.oldestAgeSeconds)
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
