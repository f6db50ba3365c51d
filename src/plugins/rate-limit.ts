import rateLimit from '@fastify/rate-limit'
import type { FastifyPluginAsync, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { Config } from '../config.js'
import { AppError } from '../errors.js'
import { bearerTokenOf } from '../http/principal.js'

const RESET_HEADER = 'x-ratelimit-reset'
const REDIS_STARTUP_WAIT_MS = 2000
// Probes, metrics and the API explorer's own files are never limited.
const UNLIMITED = /^\/(actuator\/|swagger-ui|v3\/api-docs)/

/** `billing-sync=10000,etl=5000`: hourly limits for particular clients (`azp`) above the default. */
function parseClientLimits(setting: string): Map<string, number> {
  return new Map(
    setting
      .split(',')
      .filter(Boolean)
      .map((entry) => {
        const [clientId, limit] = entry.split('=')
        return [clientId as string, Number(limit)]
      }),
  )
}

/**
 * Limits per window: an authenticated caller by subject (1000 by default, more for clients named in
 * RATE_LIMIT_CLIENTS), anyone else by IP (100). With REDIS_URL the counters are shared by every
 * instance; without it each instance counts alone. If Redis fails, requests pass (availability
 * over limits) and the failure is logged.
 */
const rateLimits: FastifyPluginAsync<{ config: Config }> = async (app, { config }) => {
  const clientLimits = parseClientLimits(config.RATE_LIMIT_CLIENTS)
  const redis = config.REDIS_URL
    ? new (await import('ioredis')).Redis(config.REDIS_URL, {
        connectTimeout: 2000,
        maxRetriesPerRequest: 1,
        enableOfflineQueue: false,
      })
    : undefined
  redis?.on('error', (error: Error) =>
    app.log.warn({ err: { message: error.message } }, 'rate limit store error'),
  )
  if (redis) {
    app.addHook('onClose', async () => void (await redis.quit().catch(() => redis.disconnect())))
    // Commands are not queued while disconnected (so an outage cannot stall requests); give the
    // first connection a moment so the earliest requests are counted too.
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, REDIS_STARTUP_WAIT_MS)
      redis.once('ready', () => {
        clearTimeout(timer)
        resolve()
      })
    })
  }

  // The key needs a verified subject, so a forged token cannot spend someone else's allowance or
  // escape the anonymous limit; the access guard reuses the principal found here.
  async function keyOf(request: FastifyRequest): Promise<string> {
    if (bearerTokenOf(request) !== undefined) {
      try {
        return `sub:${(await app.authenticate(request)).subject}`
      } catch {
        // Counted as anonymous; the guard answers 401.
      }
    }
    return `ip:${request.ip}`
  }

  await app.register(rateLimit, {
    global: true,
    ...(redis ? { redis } : {}),
    nameSpace: 'ehr-rate-limit:',
    skipOnError: true,
    timeWindow: config.RATE_LIMIT_WINDOW_SECONDS * 1000,
    keyGenerator: keyOf,
    max: async (request, key) => {
      if (!key.startsWith('sub:')) return config.RATE_LIMIT_ANONYMOUS
      return clientLimits.get(request.principal?.clientId ?? '') ?? config.RATE_LIMIT_AUTHENTICATED
    },
    // CORS preflights carry no token, so they would count against the anonymous limit of the
    // caller's IP (a whole clinic behind one NAT), once per distinct URL; the CORS plugin answers them.
    allowList: (request) => request.method === 'OPTIONS' || UNLIMITED.test(request.url),
    errorResponseBuilder: (request, context) => {
      app.serviceMetrics.rateLimited(request.principal ? 'authenticated' : 'anonymous')
      return new AppError(
        'RATE_001',
        `Limit of ${context.max} requests per window reached; retry in ${context.after}`,
      )
    },
  })

  // The plugin counts seconds until the reset; the API promises the Unix time of the reset.
  app.addHook('onSend', (_request, reply, payload, done) => {
    const secondsLeft = reply.getHeader(RESET_HEADER)
    if (secondsLeft !== undefined)
      reply.header(RESET_HEADER, Math.floor(Date.now() / 1000) + Number(secondsLeft))
    done(null, payload)
  })
}

export default fp(rateLimits, { name: 'rate-limits', dependencies: ['auth', 'metrics'] })
