import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import Fastify, { type FastifyServerOptions, LogController } from 'fastify'
import type { DatabaseHandle } from '../db/connect.js'
import { migrateDatabase, openDatabases } from '../db/open-databases.js'
import type { StorageSettings } from './config/storage.js'
import type { Config } from './config.js'
import { clientErrorHandler } from './http/client-errors.js'
import { routeHeadAsGet } from './http/head-requests.js'
import { lazyChildLoggers } from './lib/lazy-child-logger.js'
import { serializersOnFirstUse } from './lib/lazy-compile.js'
import { configuredMailer } from './lib/mailer.js'
import { loadEncryptionKey, previousEncryptionKeys } from './lib/secret-box.js'
import { embeddedDatabaseStep, startupProgress } from './lib/startup-progress.js'
import providerScheduleViewRoutes from './modules/appointments/provider-schedule-routes.js'
import appointmentRoutes from './modules/appointments/routes.js'
import auditRoutes from './modules/audit/routes.js'
import { sendPasswordResetLink } from './modules/auth/passwords.js'
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
    level: config.logging.level,
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
async function documentStore(settings: StorageSettings) {
  if (!settings.s3) return failingAsUnavailable(localStore(settings.documentsDir))
  const { s3Store } = await import('./modules/documents/s3-store.js')
  return failingAsUnavailable(await s3Store(settings.s3))
}

async function migrateOnStart(config: Config, handle: DatabaseHandle, progress: (step: string) => void) {
  const started = performance.now()
  const applied =
    (await migrateDatabase(config.database, handle, () => progress('applying database migrations')))
      .results ?? []
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
    bodyLimit: config.server.bodyLimitBytes,
    // Fastify's default (0) would let a client hold a connection open forever sending a request slowly.
    requestTimeout: config.server.requestTimeoutMs,
    clientErrorHandler,
    // HEAD is answered by each path's GET route (head-requests.ts), not by a second route per GET.
    exposeHeadRoutes: false,
    rewriteUrl: routeHeadAsGet,
    schemaController: { compilersFactory: { buildSerializer: serializersOnFirstUse } },
    trustProxy: config.server.trustProxy,
    frameworkErrors: frameworkErrorHandler,
    // Ready hooks wait for the database (the embedded one opening, migrations, the signing key):
    // on a loaded machine that can pass Fastify's 10 s default, and a slow start is not a failed one.
    pluginTimeout: 60_000,
  }).withTypeProvider<TypeBoxTypeProvider>()

  // Before the database: a deployment missing its key stops here, naming the variable.
  const encryptionKey = await loadEncryptionKey(config.encryption)
  const mailer = configuredMailer(config.mail, app.log)
  const progress = startupProgress(app.log, overrides.logStream)
  const databases = await openDatabases(config.database, {
    primary: overrides.database,
    templateCache: overrides.templateCache,
    onEmbeddedOpen: (fromTemplate) =>
      progress(embeddedDatabaseStep(config.database.embeddedDir, fromTemplate)),
    exportPool: config.bulkExport.pool,
    onPoolError: (pool, error) => app.log.error({ err: { message: error.message } }, `${pool} pool error`),
  })
  const { primary: handle, replicas } = databases
  // Awaited once every plugin and route is registered, none of which reads the database before
  // the app is ready: the embedded database opens on its own thread meanwhile.
  const migrated = config.database.migrateOnStart
    ? migrateOnStart(config, handle, progress)
    : Promise.resolve()
  migrated.catch(() => {})

  await app.register(validation)
  await app.register(requestContext)
  await app.register(securityHeaders, { corsOrigins: config.server.corsOrigins })
  await app.register(errorHandler, { bodyLimit: config.server.bodyLimitBytes })
  await app.register(database, { handle })
  // Early, so that the plugins after it can count and every route gets its latency histogram.
  await app.register(metrics)
  await app.register(readReplicas, { replicas })
  await app.register(audit, { flushIntervalMs: config.audit.flushIntervalMs })
  await app.register(background)
  await app.register(housekeeping, { config })
  await app.register(passwordHashing, { settings: config.identity.passwordHashing })
  await app.register(auth, { identity: config.identity, encryption: config.encryption })
  await app.register(rateLimits, { settings: config.rateLimits, encryptionKey })
  await app.register(routeConventions)
  // Before every route: it marks each one, as it is added, compressed (list pages) or not.
  await app.register(compression)
  await app.register(openapi)
  await app.register(health, { dataDir: config.storage.dataDir })
  await app.register(encryption, {
    key: encryptionKey,
    previousKeys: previousEncryptionKeys(config.encryption),
  })
  await app.register(conditionalRequests, { requireIfMatch: config.sync.requireIfMatch })
  await app.register(sync, { key: encryptionKey, tombstoneRetentionDays: config.sync.tombstoneRetentionDays })
  const webhookTargets = {
    allowHttp: config.webhooks.allowHttp,
    allowPrivateTargets: config.webhooks.allowPrivateTargets,
    resolve: overrides.resolveHost ?? systemResolver,
  }
  await app.register(outbox, { settings: config.webhooks, targets: webhookTargets })

  const store = await documentStore(config.storage)
  // Before the routes: exports give way to the requests they serve.
  const fhirTypes = resourceTypes({ mrnSystem: config.fhir.mrnSystem, base: config.fhir.base })
  const { worker: runExports, pool: _exportPool, ...exportSettings } = config.bulkExport
  await app.register(bulkExportWorker, {
    run: runExports,
    db: databases.exports.db,
    replicas,
    close: databases.exports.close,
    store,
    types: fhirTypes,
    embedded: handle.kind === 'pglite',
    settings: { ...exportSettings, pollIntervalMs: config.webhooks.pollIntervalMs },
  })
  await app.register(authRoutes, {
    prefix: '/api/auth',
    loginStyle: config.identity.loginResponseStyle,
    external: !config.identity.embeddedIssuer,
    mailer,
    passwordResetUrl: config.mail.passwordResetUrl,
  })
  await app.register(userRoutes, {
    prefix: '/api/users',
    external: !config.identity.embeddedIssuer,
    resetMail: (email: string) =>
      sendPasswordResetLink(app.db, mailer, { email, resetUrl: config.mail.passwordResetUrl }),
  })
  await app.register(clientRoutes, {
    prefix: '/api/clients',
    settings: {
      external: !config.identity.embeddedIssuer,
      secretOverlapSeconds: config.identity.clientSecretOverlapSeconds,
      // JWKS URLs of clients follow the webhook address policy (and its development allowances).
      jwksUrls: webhookTargets,
    },
  })
  await app.register(patientRoutes, { prefix: '/api/patients' })
  await app.register(clinicalRoutes, { prefix: '/api/patients' })
  await app.register(messageRoutes, { prefix: '/api/messages' })
  await app.register(telehealthRoutes, { prefix: '/api/telehealth', jitsi: config.telehealth.jitsi })
  await app.register(billingRoutes, {
    prefix: '/api/billing',
    settings: config.billing,
  })
  await app.register(documentRoutes, {
    prefix: '/api',
    store,
    maxUploadBytes: config.storage.maxUploadBytes,
    retentionDays: config.storage.documentRetentionDays,
  })
  const webhookSettings = {
    targets: webhookTargets,
    secretBox: app.secretBox,
    secretOverlapSeconds: config.webhooks.secretOverlapSeconds,
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
    base: config.fhir.base,
    types: fhirTypes,
    authorization:
      app.identityProvider ?? embeddedIssuerMetadata(config.identity.tokenIssuer, scopesSupported),
    bodyLimit: config.server.bodyLimitBytes,
    documentStore: store,
    bulkExport: {
      worker: app.bulkExports,
      store,
      retentionHours: config.bulkExport.retentionHours,
    },
  })
  await app.register(oidcRoutes, {
    prefix: `/realms/${config.identity.realm}`,
    issuerUrl: config.identity.tokenIssuer,
    publicClientId: config.identity.clientId,
    jwksUrls: webhookTargets,
    fhirScopes: scopeRules(fhirTypes),
    scopesSupported,
  })

  await migrated
  return app
}

export type App = Awaited<ReturnType<typeof buildApp>>
