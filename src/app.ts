import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import Fastify, { LogController } from 'fastify'
import type { DatabaseHandle } from '../db/connect.js'
import { migrateDatabase, openDatabases } from '../db/open-databases.js'
import areas from './areas.js'
import type { Config } from './config.js'
import { clientErrorHandler } from './http/client-errors.js'
import { routeHeadAsGet } from './http/head-requests.js'
import { type LogStream, loggerOptions } from './http/logging.js'
import { configuredMailer } from './lib/mailer.js'
import { loadEncryptionKey, previousEncryptionKeys } from './lib/secret-box.js'
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
import { lazyChildLoggers } from './runtime/lazy-child-logger.js'
import { serializersOnFirstUse } from './runtime/lazy-compile.js'
import { embeddedDatabaseStep, startupProgress } from './runtime/startup-progress.js'

export interface AppOverrides {
  /** An already open database (tests); otherwise opened from the configuration. */
  database?: DatabaseHandle
  /** Where log lines go instead of standard output. */
  logStream?: LogStream
  /** How webhook hosts are resolved (tests stub DNS so that no packet leaves loopback). */
  resolveHost?: HostResolver
  /** Where a new embedded database's template is looked for; default `templateCache()` (tests point it elsewhere). */
  templateCache?: string
}

async function migrateOnStart(config: Config, handle: DatabaseHandle, progress: (step: string) => void) {
  const started = performance.now()
  const onPending = () => progress('applying database migrations')
  const applied = (await migrateDatabase(config.database, handle, onPending)).results ?? []
  if (applied.length > 0) {
    progress(`applied ${applied.length} migrations in ${Math.round(performance.now() - started)} ms`)
  }
}

/** Builds the whole service as a Fastify instance; `start.ts` only starts it. */
export async function buildApp(config: Config, overrides: AppOverrides = {}) {
  const app = Fastify({
    logger: loggerOptions(config.logging, overrides.logStream),
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
  // Awaited once every plugin and route is registered, none of which reads the database before
  // the app is ready: the embedded database opens on its own thread meanwhile.
  const migrated = config.database.migrateOnStart
    ? migrateOnStart(config, databases.primary, progress)
    : Promise.resolve()
  migrated.catch(() => {})

  await app.register(validation)
  await app.register(requestContext)
  await app.register(securityHeaders, { corsOrigins: config.server.corsOrigins })
  await app.register(errorHandler, { bodyLimit: config.server.bodyLimitBytes })
  await app.register(database, { handle: databases.primary })
  // Early, so that the plugins after it can count and every route gets its latency histogram.
  await app.register(metrics)
  await app.register(readReplicas, { replicas: databases.replicas })
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
  const { allowHttp, allowPrivateTargets } = config.webhooks
  const targets = { allowHttp, allowPrivateTargets, resolve: overrides.resolveHost ?? systemResolver }
  await app.register(outbox, { settings: config.webhooks, targets })
  await app.register(areas, { config, databases, mailer, targets, encryptionKey })

  await migrated
  return app
}

export type App = Awaited<ReturnType<typeof buildApp>>
