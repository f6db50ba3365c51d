import rateLimit, { type FastifyRateLimitStore } from '@fastify/rate-limit'
import type { FastifyBaseLogger, FastifyPluginAsync, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { Redis } from 'ioredis'
import type { Config } from '../config.js'
import { AppError } from '../errors.js'
import type { ServiceMetrics } from '../lib/metrics.js'
import {
  type Count,
  defineCountCommand,
  redisWindowCounter,
  type WindowCounter,
} from '../lib/redis-window-counter.js'

const RESET_HEADER = 'x-ratelimit-reset'
const REDIS_STARTUP_WAIT_MS = 2000
// A Redis that accepts connections but stops answering must not hold requests: past this a count
// has failed and the request is counted by this instance.
const REDIS_ANSWER_WITHIN_MS = 500
// The client's own limit, well past that one, only clears commands of a silent connection from
// its queue: the deadline above also reads an answer that came while the event loop was busy
// (src/lib/deadline.ts), which the client's timer would take for silence.
const REDIS_COMMAND_TIMEOUT_MS = 10 * REDIS_ANSWER_WITHIN_MS
// While Redis is unreachable, one request per second tries it again; the others do not wait on it.
const REDIS_RETRY_INTERVAL_MS = 1000
// Per-instance counters kept at most (the least recently counted are forgotten first); an entry
// is a few dozen bytes, so this bounds the memory a flood of addresses can take.
const LOCAL_KEYS_MAX = 50_000
const NAMESPACE = 'ehr-rate-limit:'
// Probes, metrics and the API explorer's own files are never limited.
const UNLIMITED = /^\/(actuator\/|swagger-ui|v3\/api-docs)/

/** Whether requests to `url` are counted (and carry the X-RateLimit headers). */
export const isRateLimited = (url: string) => !UNLIMITED.test(url)
// The scheme is case-insensitive (RFC 9110 §11.1), and the token verifier accepts any case: a
// lowercase `bearer` must be counted against its caller, not the address's anonymous allowance.
const BEARER = /^Bearer\s/i

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

/** Fixed windows counted in this process, least recently used keys forgotten past `LOCAL_KEYS_MAX`. */
function localCounter() {
  const windows = new Map<string, { count: number; endsAt: number }>()
  return (key: string, windowMs: number): Count => {
    const now = Date.now()
    let entry = windows.get(key)
    if (!entry || entry.endsAt <= now) entry = { count: 0, endsAt: now + windowMs }
    entry.count++
    windows.delete(key)
    windows.set(key, entry)
    if (windows.size > LOCAL_KEYS_MAX) windows.delete(windows.keys().next().value as string)
    return { current: entry.count, ttl: entry.endsAt - now }
  }
}

/**
 * The counters of the limits: in Redis when REDIS_URL is set (shared by every instance), and in
 * this process when it is not, or while Redis cannot be reached. An outage therefore never lifts
 * the limits: each instance enforces them on its own until Redis answers again (a caller spread
 * over N instances gets up to N times the allowance meanwhile). The switch both ways is logged
 * once, and `ehr_rate_limit_fallback_active` shows it.
 */
function counters(redis: Redis | undefined, log: FastifyBaseLogger, metrics: ServiceMetrics) {
  const local = localCounter()
  const shared = redis && redisWindowCounter(redis, { answerWithinMs: REDIS_ANSWER_WITHIN_MS })
  let degraded = false
  let retryAt = 0

  const fallBack = (error: unknown) => {
    retryAt = Date.now() + REDIS_RETRY_INTERVAL_MS
    if (degraded) return
    degraded = true
    metrics.rateLimitFallback(true)
    log.warn(
      { err: { message: (error as Error | undefined)?.message } },
      'rate limit store unreachable; counting per instance until it answers again',
    )
  }
  const recovered = () => {
    if (!degraded) return
    degraded = false
    metrics.rateLimitFallback(false)
    log.info('rate limit store reachable again; counting shared')
  }
  const countLocally = (key: string, windowMs: number) => {
    metrics.rateLimitCountedLocally()
    return local(key, windowMs)
  }
  if (redis && redis.status !== 'ready') fallBack(new Error(`not connected (${redis.status})`))

  const failedOver = (key: string, windowMs: number) => (error: unknown) => {
    fallBack(error)
    return countLocally(key, windowMs)
  }

  // Without a promise when the count is at hand (counted here, or reserved ahead in Redis): most
  // requests of a busy caller take a reserved count, and each promise costs them a turn of the
  // microtask queue or two.
  return (key: string, windowMs: number, max: number): Count | Promise<Count> => {
    if (!shared) return local(key, windowMs)
    if (degraded && Date.now() < retryAt) return countLocally(key, windowMs)
    const counted = shared(`${NAMESPACE}${key}`, windowMs, max)
    if (!(counted instanceof Promise)) return counted
    return counted.then(
      (count) => {
        recovered()
        return count
      },
      failedOver(key, windowMs),
    )
  }
}

/** The store @fastify/rate-limit counts with; one key space for every route (no route has its own limit). */
function storeOf(count: WindowCounter) {
  return class Store implements FastifyRateLimitStore {
    incr(
      key: string,
      callback: (error: Error | null, result?: Count) => void,
      timeWindow: number,
      max: number,
    ) {
      const counted = count(key, timeWindow, max)
      if (!(counted instanceof Promise)) return callback(null, counted)
      counted.then(
        (result) => callback(null, result),
        (error: Error) => callback(error),
      )
    }
    child() {
      return this
    }
  }
}

async function connectRedis(url: string, log: FastifyBaseLogger): Promise<Redis> {
  const { Redis: RedisClient } = await import('../lib/on-demand/ioredis.js')
  const redis = new RedisClient(url, {
    connectTimeout: 2000,
    commandTimeout: REDIS_COMMAND_TIMEOUT_MS,
    maxRetriesPerRequest: 1,
    enableOfflineQueue: false,
  })
  defineCountCommand(redis)
  redis.on('error', (error: Error) =>
    log.debug({ err: { message: error.message } }, 'rate limit store error'),
  )
  // Commands are not queued while disconnected (so an outage cannot stall requests); give the
  // first connection a moment so the earliest requests are counted in Redis too.
  await new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, REDIS_STARTUP_WAIT_MS)
    redis.once('ready', () => {
      clearTimeout(timer)
      resolve()
    })
  })
  return redis
}

/**
 * Limits per window: an authenticated caller by subject (1000 by default, more for clients named in
 * RATE_LIMIT_CLIENTS), anyone else by IP (100). With REDIS_URL the counters are shared by every
 * instance; without it, or while Redis is unreachable, each instance counts alone.
 */
const rateLimits: FastifyPluginAsync<{ config: Config }> = async (app, { config }) => {
  const clientLimits = parseClientLimits(config.RATE_LIMIT_CLIENTS)
  const redis = config.REDIS_URL ? await connectRedis(config.REDIS_URL, app.log) : undefined
  if (redis) {
    app.addHook('onClose', async () => void (await redis.quit().catch(() => redis.disconnect())))
  }

  // The key needs a verified subject, so a forged token cannot spend someone else's allowance or
  // escape the anonymous limit; the access guard reuses the principal found here.
  async function keyOf(request: FastifyRequest): Promise<string> {
    if (BEARER.test(request.headers.authorization ?? '')) {
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
    store: storeOf(counters(redis, app.log, app.serviceMetrics)),
    // The store always counts (in this process when Redis fails), so an error here is a bug and
    // must not silently lift the limit.
    skipOnError: false,
    timeWindow: config.RATE_LIMIT_WINDOW_SECONDS * 1000,
    keyGenerator: keyOf,
    max: (request, key) => {
      if (!key.startsWith('sub:')) return config.RATE_LIMIT_ANONYMOUS
      return clientLimits.get(request.principal?.clientId ?? '') ?? config.RATE_LIMIT_AUTHENTICATED
    },
    // CORS preflights carry no token, so they would count against the anonymous limit of the
    // caller's IP (a whole clinic behind one NAT), once per distinct URL; the CORS plugin answers them.
    allowList: (request) => request.method === 'OPTIONS' || !isRateLimited(request.url),
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
