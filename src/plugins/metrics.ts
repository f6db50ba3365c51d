import type { FastifyPluginAsync } from 'fastify'
import metricsPlugin from 'fastify-metrics'
import fp from 'fastify-plugin'

/**
 * Prometheus metrics at /actuator/prometheus: process metrics, a latency histogram per route
 * template (never the raw URL, so no ids reach labels), database pool and audit buffer gauges.
 */
const metrics: FastifyPluginAsync = async (app) => {
  await app.register(metricsPlugin.default, {
    endpoint: '/actuator/prometheus',
    // Tests build several apps in one process; each starts from an empty registry.
    clearRegisterOnInit: true,
    defaultMetrics: { enabled: true },
    // The summary costs throughput and duplicates the histogram; keep only the histogram.
    routeMetrics: {
      enabled: { histogram: true, summary: false },
      routeBlacklist: ['/actuator/prometheus'],
      overrides: { histogram: { buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10] } },
    },
  })

  // fastify-metrics registers the summary even when it is disabled; it would only ever be empty.
  app.metrics.client.register.removeSingleMetric('http_request_summary_seconds')

  const { Gauge } = app.metrics.client
  new Gauge({
    name: 'ehr_db_pool_connections',
    help: 'Database pool connections by state',
    labelNames: ['state'],
    collect() {
      const stats = app.database.poolStats()
      this.set({ state: 'total' }, stats.total)
      this.set({ state: 'idle' }, stats.idle)
      this.set({ state: 'waiting' }, stats.waiting)
    },
  })
  new Gauge({
    name: 'ehr_audit_records_buffered',
    help: 'Audit records waiting to be written',
    collect() {
      this.set(app.auditLog.buffered)
    },
  })
}

export default fp(metrics, { name: 'metrics', dependencies: ['database', 'audit'] })
