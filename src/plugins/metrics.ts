import type { FastifyPluginAsync, FastifyReply, FastifyRequest, onResponseHookHandler } from 'fastify'
import metricsPlugin from 'fastify-metrics'
import fp from 'fastify-plugin'
import { onRefreshTokenReuse } from '../identity/sessions.js'
import {
  createServiceMetrics,
  LATENCY_BUCKETS,
  type LoginOutcome,
  METRIC,
  type ServiceMetrics,
} from '../lib/service-metrics.js'

declare module 'fastify' {
  interface FastifyInstance {
    serviceMetrics: ServiceMetrics
  }
}

// Sign-in routes whose answers count as logins; the token endpoint only for these grants.
const LOGIN_ROUTES = new Set(['/api/auth/login', '/api/auth/idp-login'])
const TOKEN_ENDPOINT = '/protocol/openid-connect/token'
const SIGN_IN_GRANTS = new Set(['password', 'client_credentials', 'authorization_code'])

function loginOutcome(statusCode: number): LoginOutcome {
  if (statusCode < 400) return 'success'
  return statusCode < 500 ? 'failure' : 'error'
}

/**
 * Prometheus metrics at /actuator/prometheus: process metrics, a latency histogram per route
 * template and status class (never the raw URL, so no ids reach labels), and the service's own
 * metrics (src/lib/service-metrics.ts). Registered before the other plugins so that they can count.
 */
const metrics: FastifyPluginAsync = async (app) => {
  await app.register(metricsPlugin.default, {
    endpoint: '/actuator/prometheus',
    // Tests build several apps in one process; each starts from an empty registry.
    clearRegisterOnInit: true,
    defaultMetrics: { enabled: true },
    // The summary costs throughput and duplicates the histogram; keep only the histogram.
    // Status classes (2xx, 4xx, 5xx) rather than codes keep the series few.
    routeMetrics: {
      enabled: { histogram: true, summary: false },
      routeBlacklist: ['/actuator/prometheus'],
      groupStatusCodes: true,
      overrides: {
        labels: { status: 'status_class' },
        histogram: { name: METRIC.httpRequestDuration, buckets: LATENCY_BUCKETS },
      },
    },
  })

  // fastify-metrics registers the summary even when it is disabled; it would only ever be empty.
  app.metrics.client.register.removeSingleMetric('http_request_summary_seconds')
  // prom-client names these gauges `_total`, which Prometheus reserves for counters (promtool
  // rejects them); the same figures remain, by type, in nodejs_active_{handles,requests,resources}.
  for (const name of [
    'nodejs_active_handles_total',
    'nodejs_active_requests_total',
    'nodejs_active_resources_total',
  ])
    app.metrics.client.register.removeSingleMetric(name)

  const serviceMetrics = createServiceMetrics(app.metrics.client, {
    pool: () => app.database.poolStats(),
    audit: () => app.auditLog ?? { buffered: 0, flushed: 0, inserts: 0, failed: 0, dropped: 0 },
  })
  app.decorate('serviceMetrics', serviceMetrics)
  app.database.observe({
    query: (seconds, error) => serviceMetrics.query(seconds, error !== undefined),
    connectionError: serviceMetrics.connectionError,
  })
  const stopListening = onRefreshTokenReuse(serviceMetrics.refreshReuse)
  app.addHook('onClose', async () => stopListening())

  // A hook on the sign-in routes only, so other requests pay nothing for it.
  const countLogin: onResponseHookHandler = async (request: FastifyRequest, reply: FastifyReply) => {
    const grant = (request.body as { grant_type?: unknown } | undefined)?.grant_type
    if (request.url.includes(TOKEN_ENDPOINT) && !SIGN_IN_GRANTS.has(String(grant))) return
    serviceMetrics.login(loginOutcome(reply.statusCode))
  }
  app.addHook('onRoute', (route) => {
    if (!LOGIN_ROUTES.has(route.url) && !route.url.endsWith(TOKEN_ENDPOINT)) return
    const existing = route.onResponse
    route.onResponse = [...(existing ? [existing].flat() : []), countLogin]
  })
}

export default fp(metrics, { name: 'metrics', dependencies: ['database'] })
