import type client from 'prom-client'

/**
 * Every metric the service defines, by name, in one place (docs/operations.md documents them and
 * ops/ alerts on them). fastify-metrics adds the process metrics and the HTTP histogram.
 * Label values come from short fixed lists, never from ids, paths or user input, so the number of
 * series stays bounded.
 */
export const METRIC = {
  httpRequestDuration: 'http_request_duration_seconds',
  dbPoolConnections: 'ehr_db_pool_connections',
  dbPoolMaxConnections: 'ehr_db_pool_max_connections',
  dbPoolWaitingClients: 'ehr_db_pool_waiting_clients',
  dbQueryDuration: 'ehr_db_query_duration_seconds',
  dbConnectionErrors: 'ehr_db_connection_errors_total',
  dbReplicaLag: 'ehr_db_replica_lag_seconds',
  dbReplicaInRotation: 'ehr_db_replica_in_rotation',
  webhookDeliveries: 'ehr_webhook_deliveries_total',
  webhookAttemptDuration: 'ehr_webhook_attempt_duration_seconds',
  outboxBacklog: 'ehr_outbox_backlog',
  outboxOldestPendingAge: 'ehr_outbox_oldest_pending_age_seconds',
  webhooksDeactivated: 'ehr_webhooks_deactivated',
  outboxBacklogReadAge: 'ehr_outbox_backlog_read_age_seconds',
  authLogins: 'ehr_auth_logins_total',
  authTokenRejections: 'ehr_auth_token_rejections_total',
  authRefreshReuse: 'ehr_auth_refresh_token_reuse_total',
  rateLimitRejections: 'ehr_rate_limit_rejections_total',
  rateLimitFallbackActive: 'ehr_rate_limit_fallback_active',
  rateLimitFallbackRequests: 'ehr_rate_limit_fallback_requests_total',
  housekeepingRowsPurged: 'ehr_housekeeping_rows_purged_total',
  housekeepingRuns: 'ehr_housekeeping_runs_total',
  housekeepingLastRun: 'ehr_housekeeping_last_run_timestamp_seconds',
  auditRecordsBuffered: 'ehr_audit_records_buffered',
  auditRecordsFlushed: 'ehr_audit_records_flushed_total',
  auditInserts: 'ehr_audit_inserts_total',
  auditFlushFailures: 'ehr_audit_flush_failures_total',
  auditRecordsDropped: 'ehr_audit_records_dropped_total',
} as const

/** Latency buckets (seconds) shared by the HTTP, query and webhook histograms. */
export const LATENCY_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

export type LoginOutcome = 'success' | 'failure' | 'error'
export type TokenRejection = 'missing' | 'malformed' | 'expired' | 'invalid' | 'account' | 'organization'
export type RateLimitedCaller = 'authenticated' | 'anonymous' | 'sign-in'
/** The tables the housekeeping job purges (the label values of its metric). */
export const PURGED_TABLES = [
  'password_reset_tokens',
  'refresh_tokens',
  'webhook_deliveries',
  'webhook_delivery_attempts',
  'audit_log',
] as const
export type PurgedTable = (typeof PURGED_TABLES)[number]
/** completed: ran to the end; skipped: another instance held the lock; failed: stopped by an error. */
export type HousekeepingOutcome = 'completed' | 'skipped' | 'failed'

export interface MetricSources {
  pool(): { total: number; idle: number; waiting: number; max: number }
  audit(): { buffered: number; flushed: number; inserts: number; failed: number; dropped: number }
}

/**
 * Registers the service's metrics. Gauges and the audit totals are read from `sources` at scrape
 * time; the returned functions update the rest as things happen.
 */
export function createServiceMetrics(prometheus: typeof client, sources: MetricSources) {
  const queryDuration = new prometheus.Histogram({
    name: METRIC.dbQueryDuration,
    help: 'Duration of database queries, by outcome (ok, error)',
    labelNames: ['outcome'],
    buckets: LATENCY_BUCKETS,
  })
  const connectionErrors = new prometheus.Counter({
    name: METRIC.dbConnectionErrors,
    help: 'Database connections lost or refused',
  })
  const logins = new prometheus.Counter({
    name: METRIC.authLogins,
    help: 'Sign-ins (password and client credentials) by outcome: success, failure (refused), error',
    labelNames: ['outcome'],
  })
  const tokenRejections = new prometheus.Counter({
    name: METRIC.authTokenRejections,
    help: 'Requests whose access token was refused, by reason',
    labelNames: ['reason'],
  })
  const refreshReuse = new prometheus.Counter({
    name: METRIC.authRefreshReuse,
    help: 'Refresh tokens presented again after being exchanged (the session was revoked)',
  })
  const rateLimited = new prometheus.Counter({
    name: METRIC.rateLimitRejections,
    help: 'Requests refused with 429 by the rate limit, by caller kind',
    labelNames: ['caller'],
  })
  const rateLimitFallbackActive = new prometheus.Gauge({
    name: METRIC.rateLimitFallbackActive,
    help: '1 while REDIS_URL is set but Redis cannot be reached and this instance counts rate limits alone',
  })
  const rateLimitFallbackRequests = new prometheus.Counter({
    name: METRIC.rateLimitFallbackRequests,
    help: 'Requests counted by this instance alone because Redis (REDIS_URL) could not be reached',
  })
  const rowsPurged = new prometheus.Counter({
    name: METRIC.housekeepingRowsPurged,
    help: 'Rows deleted by the housekeeping job, by table',
    labelNames: ['table'],
  })
  const housekeepingRuns = new prometheus.Counter({
    name: METRIC.housekeepingRuns,
    help: 'Runs of the housekeeping job by outcome: completed, skipped (another instance ran it), failed',
    labelNames: ['outcome'],
  })
  const housekeepingLastRun = new prometheus.Gauge({
    name: METRIC.housekeepingLastRun,
    help: 'When this instance last completed a housekeeping run (Unix time; 0: not yet)',
  })
  // The audit log counts for itself; these read its totals at scrape time, off the request path.
  new prometheus.Gauge({
    name: METRIC.auditRecordsBuffered,
    help: 'Audit records waiting to be written',
    collect() {
      this.set(sources.audit().buffered)
    },
  })
  new prometheus.Counter({
    name: METRIC.auditRecordsFlushed,
    help: 'Audit records written to the database',
    collect() {
      this.reset()
      this.inc(sources.audit().flushed)
    },
  })
  new prometheus.Counter({
    name: METRIC.auditInserts,
    help: 'Inserts that wrote audit records (records written per insert: how many calls share a commit)',
    collect() {
      this.reset()
      this.inc(sources.audit().inserts)
    },
  })
  new prometheus.Counter({
    name: METRIC.auditFlushFailures,
    help: 'Failed audit inserts (their successful calls answer 503; records of calls that failed anyway are retried)',
    collect() {
      this.reset()
      this.inc(sources.audit().failed)
    },
  })
  new prometheus.Counter({
    name: METRIC.auditRecordsDropped,
    help: 'Audit records of failed calls dropped because too many waited (the database was down too long)',
    collect() {
      this.reset()
      this.inc(sources.audit().dropped)
    },
  })
  new prometheus.Gauge({
    name: METRIC.dbPoolConnections,
    help: 'Open database connections by state (idle, in_use)',
    labelNames: ['state'],
    collect() {
      const stats = sources.pool()
      this.set({ state: 'idle' }, stats.idle)
      this.set({ state: 'in_use' }, stats.total - stats.idle)
    },
  })
  new prometheus.Gauge({
    name: METRIC.dbPoolMaxConnections,
    help: 'Most connections the database pool opens',
    collect() {
      this.set(sources.pool().max)
    },
  })
  new prometheus.Gauge({
    name: METRIC.dbPoolWaitingClients,
    help: 'Queries waiting for a free database connection',
    collect() {
      this.set(sources.pool().waiting)
    },
  })
  // Series that exist from the start, so rates and alerts see zero rather than nothing.
  for (const outcome of ['ok', 'error']) queryDuration.zero({ outcome })
  for (const outcome of ['success', 'failure', 'error']) logins.inc({ outcome }, 0)
  for (const caller of ['authenticated', 'anonymous', 'sign-in']) rateLimited.inc({ caller }, 0)
  rateLimitFallbackActive.set(0)
  for (const table of PURGED_TABLES) rowsPurged.inc({ table }, 0)
  for (const outcome of ['completed', 'skipped', 'failed']) housekeepingRuns.inc({ outcome }, 0)
  housekeepingLastRun.set(0)

  return {
    query(seconds: number, failed: boolean) {
      queryDuration.observe({ outcome: failed ? 'error' : 'ok' }, seconds)
    },
    connectionError: () => connectionErrors.inc(),
    login: (outcome: LoginOutcome) => logins.inc({ outcome }),
    tokenRejected: (reason: TokenRejection) => tokenRejections.inc({ reason }),
    refreshReuse: () => refreshReuse.inc(),
    rateLimited: (caller: RateLimitedCaller) => rateLimited.inc({ caller }),
    rateLimitFallback: (active: boolean) => rateLimitFallbackActive.set(active ? 1 : 0),
    rateLimitCountedLocally: () => rateLimitFallbackRequests.inc(),
    purged: (table: PurgedTable, rows: number) => rowsPurged.inc({ table }, rows),
    housekeepingRun(outcome: HousekeepingOutcome) {
      housekeepingRuns.inc({ outcome })
      if (outcome === 'completed') housekeepingLastRun.set(Date.now() / 1000)
    },
  }
}

export type ServiceMetrics = ReturnType<typeof createServiceMetrics>
