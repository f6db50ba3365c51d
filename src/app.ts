import path from 'node:path'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import Fastify, { type FastifyServerOptions } from 'fastify'
import { type DatabaseHandle, openPglite, openPostgres } from '../db/connect.js'
import { migrateToLatest } from '../db/migrator.js'
import type { Config } from './config.js'
import { logMailer, smtpMailer } from './lib/mailer.js'
import appointmentRoutes from './modules/appointments/routes.js'
import authRoutes from './modules/auth/routes.js'
import encounterRoutes from './modules/encounters/routes.js'
import oidcRoutes from './modules/oidc/routes.js'
import patientRoutes from './modules/patients/routes.js'
import providerRoutes from './modules/providers/routes.js'
import providerScheduleRoutes from './modules/providers/schedule-routes.js'
import audit from './plugins/audit.js'
import auth from './plugins/auth.js'
import background from './plugins/background.js'
import database from './plugins/database.js'
import errorHandler from './plugins/error-handler.js'
import health from './plugins/health.js'
import metrics from './plugins/metrics.js'
import openapi from './plugins/openapi.js'
import rateLimits from './plugins/rate-limit.js'
import requestContext, { requestIdFor } from './plugins/request-context.js'
import routeConventions from './plugins/route-conventions.js'
import validation from './plugins/validation.js'

export interface AppOverrides {
  /** An already open database (tests); otherwise opened from the configuration. */
  database?: DatabaseHandle
  /** Where log lines go instead of standard output (tests that check what is logged). */
  logStream?: { write(line: string): void }
}

function loggerOptions(config: Config, stream: AppOverrides['logStream']): FastifyServerOptions['logger'] {
  return {
    level: config.LOG_LEVEL,
    ...(stream ? { stream } : {}),
    // Only method and path: query strings and bodies can carry names and birth dates.
    serializers: {
      req: (request) => ({ method: request.method, url: request.url.split('?')[0] }),
    },
    redact: ['req.headers.authorization', 'req.headers.cookie'],
  }
}

/** `true`, `false`, or a comma-separated list of proxy addresses and CIDR ranges to trust. */
function trustProxySetting(value: string): boolean | string[] {
  if (value === 'true' || value === 'false') return value === 'true'
  return value.split(',').map((entry) => entry.trim())
}

export async function openConfiguredDatabase(config: Config, onPoolError: (error: Error) => void) {
  return config.DATABASE_URL
    ? openPostgres({ url: config.DATABASE_URL, poolMax: config.DATABASE_POOL_MAX, onPoolError })
    : openPglite({ dataDir: path.join(config.DATA_DIR, 'pgdata') })
}

/** Builds the whole service as a Fastify instance; `server.ts` only starts it. */
export async function buildApp(config: Config, overrides: AppOverrides = {}) {
  const app = Fastify({
    logger: loggerOptions(config, overrides.logStream),
    genReqId: requestIdFor,
    bodyLimit: config.BODY_LIMIT_BYTES,
    exposeHeadRoutes: false,
    trustProxy: trustProxySetting(config.TRUST_PROXY),
  }).withTypeProvider<TypeBoxTypeProvider>()

  const handle =
    overrides.database ??
    (await openConfiguredDatabase(config, (error) =>
      app.log.error({ err: { message: error.message } }, 'database pool error'),
    ))
  if (config.MIGRATE_ON_START) await migrateToLatest(handle.db)

  await app.register(validation)
  await app.register(requestContext)
  await app.register(errorHandler, { bodyLimit: config.BODY_LIMIT_BYTES })
  await app.register(database, { handle })
  await app.register(audit, { flushIntervalMs: config.AUDIT_FLUSH_INTERVAL_MS })
  await app.register(background)
  await app.register(auth, { config })
  await app.register(rateLimits, { config })
  await app.register(routeConventions)
  await app.register(metrics)
  await app.register(openapi)
  await app.register(health, { dataDir: config.DATA_DIR })

  await app.register(authRoutes, {
    prefix: '/api/auth',
    loginStyle: config.LOGIN_RESPONSE_STYLE,
    external: !config.embeddedIssuer,
    mailer: config.SMTP_URL ? smtpMailer(config.SMTP_URL, config.MAIL_FROM) : logMailer(app.log),
    passwordResetUrl: config.PASSWORD_RESET_URL,
  })
  await app.register(patientRoutes, { prefix: '/api/patients' })
  await app.register(providerRoutes, { prefix: '/api/providers' })
  await app.register(providerScheduleRoutes, { prefix: '/api/providers' })
  await app.register(appointmentRoutes, { prefix: '/api/appointments' })
  await app.register(encounterRoutes, { prefix: '/api/encounters' })
  await app.register(oidcRoutes, {
    prefix: `/realms/${config.OIDC_REALM}`,
    issuerUrl: config.tokenIssuer,
    publicClientId: config.OIDC_CLIENT_ID,
  })

  return app
}

export type App = Awaited<ReturnType<typeof buildApp>>
