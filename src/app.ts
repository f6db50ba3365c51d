import path from 'node:path'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import Fastify, { type FastifyServerOptions, LogController } from 'fastify'
import { type DatabaseHandle, openPglite } from '../db/connect.js'
import { findTemplate } from '../db/embedded-template.js'
import { migrateToLatest } from '../db/migrator.js'
import type { Config } from './config.js'
import { clientErrorHandler } from './http/client-errors.js'
import { routeHeadAsGet } from './http/head-requests.js'
import { lazyChildLoggers } from './lib/lazy-child-logger.js'
import { serializersOnFirstUse } from './lib/lazy-compile.js'
import { configuredMailer } from './lib/mailer.js'
import { loadEncryptionKey, previousEncryptionKeys } from './lib/secret-box.js'
import { embeddedDatabaseDir, embeddedDatabaseStep, startupProgress } from './lib/startup-progress.js'
import providerScheduleViewRoutes from './modules/appointments/provider-schedule-routes.js'
import appointmentRoutes from './modules/appointments/routes.js'
import auditRoutes from './modules/audit/routes.js'
import { issuePasswordResetLink, mailPasswordResetLink } from './modules/auth/passwords.js'
import authRoutes from './modules/auth/routes.js'
import billingRoutes from './modules/billing/routes.js'
import clientRoutes from './modules/clients/routes.js'
import clinicalRoutes from './modules/clinical/routes.js'
import documentRoutes from './modules/documents/routes.js'
import { failingAsUnavailable, localStore } from './modules/documents/store.js'
import encounterRoutes from './modules/encounters/routes.js'
import eventRoutes from './modules/events/routes.js'
import { scopeRules } from './modules/fhir/access.js'
import { smartResourceScopes } from './modules/fhir/capability.js'
import bulkExportWorker from './modules/fhir/export/plugin.js'
import { resourceTypes } from './modules/fhir/resource-types.js'
import fhirRoutes from './modules/fhir/routes.js'
import messageRoutes from './modules/messages/routes.js'
import oidcRoutes, { embeddedIssuerMetadata } from './modules/oidc/routes.js'
import patientRoutes from './modules/patients/routes.js'
import providerRoutes from './modules/providers/routes.js'
import providerScheduleRoutes from './modules/providers/schedule-routes.js'
import telehealthRoutes from './modules/telehealth/routes.js'
import userRoutes from './modules/users/routes.js'
import webhookDeliveryRoutes from './modules/webhooks/delivery-routes.js'
import webhookRoutes from './modules/webhooks/routes.js'
import { type HostResolver, systemResolver } from './outbox/targets.js'

import audit from './plugins/audit.js'
import auth from './plugins/auth.js'
import background from './plugins/background.js'
import compression from './plugins/compression.js'
import conditionalRequests from './plugins/conditional-requests.js'
import database from './plugins/database.js'
import encryption from './plugins/encryption.js'
import errorHandler, { frameworkErrorHandler } from './plugins/error-handler.js'
import health from './plugins/health.js'
import housekeeping from './plugins/housekeeping.js'
import metrics from './plugins/metrics.js'
import openapi from './plugins/openapi.js'
import outbox from './plugins/outbox.js'
import passwordHashing from './plugins/password-hashing.js'
import rateLimits from './plugins/rate-limit.js'
import readReplicas from './plugins/read-replicas.js'
import requestContext, { requestIdFor } from './plugins/request-context.js'
import routeConventions from './plugins/route-conventions.js'
import securityHeaders from './plugins/security-headers.js'
import sync from './plugins/sync.js'
import validation from './plugins/validation.js'

export interface AppOverrides {
  /** An already open database (tests); otherwise opened from the configuration. */
  database?: DatabaseHandle
  /** Where log lines go instead of standard output; `flush` writes out what it buffers. */
  logStream?: { write(line: string): void; flush?(): void }
  /** How webhook hosts are resolved (tests stub DNS so that no packet leaves loopback). */
  resolveHost?: HostResolver
  /** Where a new embedded database's template is looked for; default `templateCache()` (tests point it elsewhere). */
  templateCache?: string
}

/**
 * The path a log line shows: the route template (`/api/patients/:id`), never the values in it, since
 * a client may put a name where an id belongs; for a request that matched no route, its first two
 * segments only. Query strings and bodies are never logged: they carry names and birth dates.
 */
function loggedPath(request: { url?: string; routeOptions?: { url?: string } }): string {
  const template = request.routeOptions?.url
  if (template) return template
  const segments = (request.url ?? '').split('?')[0]?.split('/') ?? []
  return segments.length > 3 ? `${segments.slice(0, 3).join('/')}/…` : segments.join('/')
}

// Credentials that could reach a log line inside an object (a header set, an error's context).
const REDACTED = [
  'req.headers.authorization',
  'req.headers.cookie',
  'headers.authorization',
  'headers.cookie',
  'headers["set-cookie"]',
  '*.password',
  '*.currentPassword',
  '*.newPassword',
  '*.token',
  '*.refreshToken',
  '*.refresh_token',
  '*.access_token',
  '*.secret',
  '*.client_secret',
]

function loggerOptions(config: Config, stream: AppOverrides['logStream']): FastifyServerOptions['logger'] {
  return {
    level: config.LOG_LEVEL,
    ...(stream ? { stream } : {}),
    serializers: {
      req: (request) => ({ method: request.method, url: loggedPath(request) }),
    },
    redact: { paths: REDACTED, censor: '[redacted]' },
  }
}

/**
 * An S3-compatible bucket when S3_BUCKET is set (instances share it), else files under DATA_DIR.
 * The S3 client is loaded only when used (s3-store.ts): it is large, and start-up time matters.
 */
async function documentStore(config: Config) {
  if (!config.S3_BUCKET) return failingAsUnavailable(localStore(path.join(config.DATA_DIR, 'documents')))
  const { s3Store } = await import('./modules/documents/s3-store.js')
  const store = await s3Store({
    bucket: config.S3_BUCKET,
    region: config.S3_REGION,
    endpoint: config.S3_ENDPOINT,
    accessKeyId: config.S3_ACCESS_KEY_ID,
    secretAccessKey: config.S3_SECRET_ACCESS_KEY,
    forcePathStyle: config.S3_FORCE_PATH_STYLE,
    prefix: config.S3_PREFIX,
  })
  return failingAsUnavailable(store)
}

/** Jitsi only when all three settings are present; otherwise joining answers 503, never an unsigned link. */
function jitsiSettings(config: Config) {
  const { JITSI_DOMAIN: domain, JITSI_APP_ID: appId, JITSI_APP_SECRET: appSecret } = config
  return domain && appId && appSecret ? { domain, appId, appSecret } : undefined
}

/** `true`, `false`, or a comma-separated list of proxy addresses and CIDR ranges to trust. */
function trustProxySetting(value: string): boolean | string[] {
  if (value === 'true' || value === 'false') return value === 'true'
  return value.split(',').map((entry) => entry.trim())
}

/** `template`: what a new embedded database starts as a copy of (db/embedded-template.ts); else initdb. */
export async function openConfiguredDatabase(
  config: Config,
  onPoolError: (error: Error) => void,
  template?: string,
): Promise<DatabaseHandle> {
  if (!config.DATABASE_URL) {
    return openPglite({
      dataDir: embeddedDatabaseDir(config.DATA_DIR),
      template,
      sharedBuffersMb: config.EMBEDDED_SHARED_BUFFERS_MB,
    })
  }
  const { openPostgres } = await import('../db/postgres.js')
  return openPostgres({
    url: config.DATABASE_URL,
    directUrl: config.DATABASE_DIRECT_URL,
    poolMax: config.DATABASE_POOL_MAX,
    preparedStatements: config.DATABASE_PREPARED_STATEMENTS,
    statementTimeoutMs: config.DATABASE_QUERY_TIMEOUT_MS,
    onPoolError,
  })
}

/** The read replicas of DATABASE_READ_URLS, if any, pooled and checked like the primary. */
async function openConfiguredReplicas(config: Config, primary: DatabaseHandle) {
  const urls = config.DATABASE_READ_URLS.split(',').filter(Boolean)
  if (urls.length === 0 || primary.kind !== 'postgres') return undefined
  const { openReadReplicas } = await import('../db/replicas.js')
  return openReadReplicas({
    primary,
    urls,
    maxLagMs: config.DATABASE_REPLICA_MAX_LAG_MS,
    checkIntervalMs: config.DATABASE_REPLICA_CHECK_INTERVAL_MS,
    poolMax: config.DATABASE_POOL_MAX,
    statementTimeoutMs: config.DATABASE_QUERY_TIMEOUT_MS,
    preparedStatements: config.DATABASE_PREPARED_STATEMENTS,
  })
}

/**
 * Brings the schema up to date. On PostgreSQL over a connection of its own with no statement
 * limit: a migration may rewrite a large table, far past what a request may wait. Direct, since a
 * pooler in front would impose its own limit.
 */
export async function migrateDatabase(
  config: Config,
  handle: DatabaseHandle,
  onPending: () => void = () => {},
) {
  if (!config.DATABASE_URL || handle.kind !== 'postgres') return migrateToLatest(handle.db, onPending)
  const url = config.DATABASE_DIRECT_URL ?? config.DATABASE_URL
  const { openPostgres } = await import('../db/postgres.js')
  const unlimited = openPostgres({ url, poolMax: 1, statementTimeoutMs: 0 })
  try {
    return await migrateToLatest(unlimited.db, onPending)
  } finally {
    await unlimited.close()
  }
}

async function migrateOnStart(config: Config, handle: DatabaseHandle, progress: (step: string) => void) {
  const started = performance.now()
  const applied =
    (await migrateDatabase(config, handle, () => progress('applying database migrations'))).results ?? []
  if (applied.length > 0) {
    progress(`applied ${applied.length} migrations in ${Math.round(performance.now() - started)} ms`)
  }
}

/** Builds the whole service as a Fastify instance; `start.ts` only starts it. */
export async function buildApp(config: Config, overrides: AppOverrides = {}) {
  const app = Fastify({
    logger: loggerOptions(config, overrides.logStream),
    genReqId: requestIdFor,
    // One access line per request (request-context.ts) instead of Fastify's two.
    logController: new LogController({ disableRequestLogging: true }),
    childLoggerFactory: lazyChildLoggers,
    bodyLimit: config.BODY_LIMIT_BYTES,
    // Fastify's default (0) would let a client hold a connection open forever sending a request slowly.
    requestTimeout: config.REQUEST_TIMEOUT_MS,
    clientErrorHandler,
    // HEAD is answered by each path's GET route (head-requests.ts), not by a second route per GET.
    exposeHeadRoutes: false,
    rewriteUrl: routeHeadAsGet,
    schemaController: { compilersFactory: { buildSerializer: serializersOnFirstUse } },
    trustProxy: trustProxySetting(config.TRUST_PROXY),
    frameworkErrors: frameworkErrorHandler,
    // Ready hooks wait for the database (the embedded one opening, migrations, the signing key):
    // on a loaded machine that can pass Fastify's 10 s default, and a slow start is not a failed one.
    pluginTimeout: 60_000,
  }).withTypeProvider<TypeBoxTypeProvider>()

  // Before the database: a deployment missing its key stops here, naming the variable.
  const encryptionKey = await loadEncryptionKey({
    configured: config.ENCRYPTION_KEY,
    dataDir: config.DATA_DIR,
    sharedDatabase: config.DATABASE_URL !== undefined,
  })
  const mailer = configuredMailer(config, app.log)
  const progress = startupProgress(app.log, overrides.logStream)
  const embedded = !overrides.database && !config.DATABASE_URL
  const template = embedded ? findTemplate(overrides.templateCache) : undefined
  if (embedded) progress(embeddedDatabaseStep(config.DATA_DIR, template !== undefined))
  const handle =
    overrides.database ??
    (await openConfiguredDatabase(
      config,
      (error) => app.log.error({ err: { message: error.message } }, 'database pool error'),
      template,
    ))
  // Awaited once every plugin and route is registered, none of which reads the database before
  // the app is ready: the embedded database opens on its own thread meanwhile.
  const migrated = config.MIGRATE_ON_START ? migrateOnStart(config, handle, progress) : Promise.resolve()
  migrated.catch(() => {})

  await app.register(validation)
  await app.register(requestContext)
  await app.register(securityHeaders, { corsOrigins: config.corsOrigins })
  await app.register(errorHandler, { bodyLimit: config.BODY_LIMIT_BYTES })
  await app.register(database, { handle })
  // Early, so that the plugins after it can count and every route gets its latency histogram.
  await app.register(metrics)
  const replicas = await openConfiguredReplicas(config, handle)
  await app.register(readReplicas, { replicas })
  await app.register(audit, { flushIntervalMs: config.AUDIT_FLUSH_INTERVAL_MS })
  await app.register(background)
  await app.register(housekeeping, { config })
  await app.register(passwordHashing, {
    settings: {
      threads: config.PASSWORD_HASH_THREADS,
      queue: config.PASSWORD_HASH_QUEUE,
      waitMs: config.PASSWORD_HASH_WAIT_MS,
    },
  })
  await app.register(auth, { config })
  await app.register(rateLimits, { config, encryptionKey })
  await app.register(routeConventions)
  // Before every route: it marks each one, as it is added, compressed (list pages) or not.
  await app.register(compression)
  await app.register(openapi)
  await app.register(health, { dataDir: config.DATA_DIR })
  await app.register(encryption, { key: encryptionKey, previousKeys: previousEncryptionKeys(config) })
  await app.register(conditionalRequests, { requireIfMatch: config.REQUIRE_IF_MATCH })
  await app.register(sync, { key: encryptionKey, tombstoneRetentionDays: config.TOMBSTONE_RETENTION_DAYS })
  const webhookTargets = {
    allowHttp: config.WEBHOOK_ALLOW_HTTP,
    allowPrivateTargets: config.WEBHOOK_ALLOW_PRIVATE_TARGETS,
    resolve: overrides.resolveHost ?? systemResolver,
  }
  await app.register(outbox, { config, targets: webhookTargets })

  const store = await documentStore(config)
  // Before the routes: exports give way to the requests they serve.
  const fhirBase = `${config.PUBLIC_URL}/fhir/R4`
  const fhirTypes = resourceTypes({ mrnSystem: config.FHIR_MRN_SYSTEM, base: fhirBase })
  // Direct: behind a pooler its statement limit would cut exports short of their own.
  const exportDatabase = config.DATABASE_URL
    ? (await import('../db/postgres.js')).openPostgres({
        url: config.DATABASE_DIRECT_URL ?? config.DATABASE_URL,
        poolMax: config.BULK_EXPORT_POOL_MAX,
        preparedStatements: 0,
        statementTimeoutMs: config.BULK_EXPORT_STATEMENT_TIMEOUT_MS,
        onPoolError: (error) => app.log.error({ err: { message: error.message } }, 'export pool error'),
      })
    : undefined
  await app.register(bulkExportWorker, {
    run: config.BULK_EXPORT_WORKER,
    db: exportDatabase?.db ?? handle.db,
    replicas,
    close: exportDatabase?.close,
    store,
    types: fhirTypes,
    embedded: handle.kind === 'pglite',
    settings: {
      fileMaxBytes: config.BULK_EXPORT_FILE_MAX_BYTES,
      retentionHours: config.BULK_EXPORT_RETENTION_HOURS,
      leaseSeconds: config.BULK_EXPORT_LEASE_SECONDS,
      perOrganization: config.BULK_EXPORT_CONCURRENCY_PER_ORGANIZATION,
      pollIntervalMs: config.OUTBOX_POLL_INTERVAL_MS,
    },
  })
  await app.register(authRoutes, {
    prefix: '/api/auth',
    loginStyle: config.LOGIN_RESPONSE_STYLE,
    external: !config.embeddedIssuer,
    mailer,
    passwordResetUrl: config.PASSWORD_RESET_URL,
  })
  await app.register(userRoutes, {
    prefix: '/api/users',
    external: !config.embeddedIssuer,
    resetLinks: {
      issue: (db, userId) => issuePasswordResetLink(db, userId, config.PASSWORD_RESET_URL),
      mail: (email, link) => mailPasswordResetLink(mailer, email, link),
    },
  })
  await app.register(clientRoutes, {
    prefix: '/api/clients',
    settings: {
      external: !config.embeddedIssuer,
      secretOverlapSeconds: config.CLIENT_SECRET_OVERLAP_SECONDS,
      // JWKS URLs of clients follow the webhook address policy (and its development allowances).
      jwksUrls: webhookTargets,
    },
  })
  await app.register(patientRoutes, { prefix: '/api/patients' })
  await app.register(clinicalRoutes, { prefix: '/api/patients' })
  await app.register(messageRoutes, { prefix: '/api/messages' })
  await app.register(telehealthRoutes, { prefix: '/api/telehealth', jitsi: jitsiSettings(config) })
  await app.register(billingRoutes, {
    prefix: '/api/billing',
    settings: { currency: config.DEFAULT_CURRENCY, taxRateBasisPoints: config.TAX_RATE_BASIS_POINTS },
  })
  await app.register(documentRoutes, {
    prefix: '/api',
    store,
    maxUploadBytes: config.MAX_UPLOAD_BYTES,
    retentionDays: config.DOCUMENT_RETENTION_DAYS,
  })
  const webhookSettings = {
    targets: webhookTargets,
    secretBox: app.secretBox,
    secretOverlapSeconds: config.WEBHOOK_SECRET_OVERLAP_SECONDS,
  }
  await app.register(webhookRoutes, { prefix: '/api/webhooks', settings: webhookSettings })
  await app.register(webhookDeliveryRoutes, { prefix: '/api/webhooks' })
  await app.register(eventRoutes, { prefix: '/api/events' })
  await app.register(providerRoutes, { prefix: '/api/providers' })
  await app.register(providerScheduleRoutes, { prefix: '/api/providers' })
  await app.register(providerScheduleViewRoutes, { prefix: '/api/providers' })
  await app.register(appointmentRoutes, { prefix: '/api/appointments' })
  await app.register(encounterRoutes, { prefix: '/api/encounters' })
  await app.register(auditRoutes, { prefix: '/api/audit-events' })
  // The embedded issuer grants SMART's refresh scopes and the FHIR interface's resource scopes.
  const scopesSupported = [
    ...['openid', 'profile', 'email', 'online_access', 'offline_access'],
    ...smartResourceScopes(fhirTypes),
  ]
  await app.register(fhirRoutes, {
    prefix: '/fhir/R4',
    base: fhirBase,
    types: fhirTypes,
    authorization: app.identityProvider ?? embeddedIssuerMetadata(config.tokenIssuer, scopesSupported),
    bodyLimit: config.BODY_LIMIT_BYTES,
    documentStore: store,
    bulkExport: {
      worker: app.bulkExports,
      store,
      retentionHours: config.BULK_EXPORT_RETENTION_HOURS,
    },
  })
  await app.register(oidcRoutes, {
    prefix: `/realms/${config.OIDC_REALM}`,
    issuerUrl: config.tokenIssuer,
    publicClientId: config.OIDC_CLIENT_ID,
    jwksUrls: webhookTargets,
    fhirScopes: scopeRules(fhirTypes),
    scopesSupported,
  })

  await migrated
  return app
}

export type App = Awaited<ReturnType<typeof buildApp>>
