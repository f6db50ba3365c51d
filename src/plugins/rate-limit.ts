import { hkdfSync } from 'node:crypto'
import rateLimit, { type FastifyRateLimitStore } from '@fastify/rate-limit'
import type { FastifyBaseLogger, FastifyPluginAsync, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { Redis } from 'ioredis'
import type { RateLimitSettings } from '../config/rate-limits.js'
import { AppError } from '../errors.js'
import {
  type Count,
  defineCountCommand,
  redisWindowCounter,
  takeBackCount,
  type WindowCounter,
} from '../lib/redis-window-counter.js'
import type { ServiceMetrics } from '../lib/service-metrics.js'
import { type AttemptOptions, signInAttempts } from '../lib/sign-in-attempts.js'

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * Runs `check` (a password or code check) as a sign-in attempt of `username` from the request's
     * address: 429 RATE_001 with Retry-After while the account or the address has failed too often,
     * and counted only if it fails (lib/sign-in-attempts.ts). Routes that call it are left out of
     * the anonymous limit (`SIGN_IN_ROUTE`).
     */
    signInAttempt<T>(
      request: FastifyRequest,
      reply: FastifyReply,
      username: string | undefined,
      check: () => Promise<T>,
      failed?: AttemptOptions['failed'],
    ): Promise<T>
  }
}

const RESET_HEADER = 'x-ratelimit-reset'
const REDIS_STARTUP_WAIT_MS = 2000
// A Redis that accepts connections but stops answering must not hold requests: past this a count
// has failed and the request is counted by this instance. A pipeline of counts on a healthy Redis
// answers in a millisecond or two, so this is a hang, not a slow answer.
export const REDIS_ANSWER_WITHIN_MS = 100
// The client's own limit, well past that one, only clears commands of a silent connection from
// its queue: the deadline above also reads an answer that came while the event loop was busy
// (src/lib/deadline.ts), which the client's timer would take for silence.
const REDIS_COMMAND_TIMEOUT_MS = 10 * REDIS_ANSWER_WITHIN_MS
// While Redis is unreachable, one request per second tries it again (waiting at most the deadline
// above); the others are counted here at once.
const REDIS_RETRY_INTERVAL_MS = 1000
// Per-instance counters kept at most (the least recently counted are forgotten first); an entry
// is a few dozen bytes, so this bounds the memory a flood of addresses can take.
const LOCAL_KEYS_MAX = 50_000
const NAMESPACE = 'ehr-rate-limit:'
// Probes, metrics and the API explorer's own files are never limited.
const UNLIMITED = /^\/(actuator\/|swagger-ui|v3\/api-docs)/

/** Whether requests to `url` are counted (and carry the X-RateLimit headers). */
export const isRateLimited = (url: string) => !UNLIMITED.test(url)

/**
 * Route config of a sign-in route: its calls are not anonymous calls (a clinic's colleagues sign in
 * from one address), so they are limited by their failures instead (`signInAttempt`).
 */
export const SIGN_IN_ROUTE = { rateLimit: false } as const

/**
 * Route config of an endpoint where only some requests are sign-ins, as `isSignIn` tells from the
 * parsed body (the token endpoint's password grant): the others count against the usual limits,
 * from the moment the body has been read.
 */
export const signInsWhen = (isSignIn: (request: FastifyRequest) => boolean) =>
  ({ rateLimit: { hook: 'preValidation', allowList: isSignIn } }) as const

// Separates the account keys of the sign-in limits from every other use of the encryption key.
const ACCOUNT_KEY_INFO = 'ehr sign-in limit account keys'
// The scheme is case-insensitive (RFC 9110 §11.1), and the token verifier accepts any case: a
// lowercase `bearer` must be counted against its caller, not the address's anonymous allowance.
const BEARER = /^Bearer\s/i

/** A fixed window of one key as this process knows it. */
interface LocalWindow {
  count: number
  endsAt: number
  /** The Redis connection (`epoch`) on which Redis last confirmed the count; -1 if never. */
  confirmedIn: number
}

/**
 * Fixed windows counted in this process, least recently used keys forgotten past
 * `LOCAL_KEYS_MAX`: the counters themselves without Redis, and with it, what Redis last said of
 * each key, which this process counts on from while Redis cannot be reached.
 */
function localCounter() {
  const windows = new Map<string, LocalWindow>()
  const keep = (key: string, entry: LocalWindow) => {
    windows.delete(key)
    windows.set(key, entry)
    if (windows.size > LOCAL_KEYS_MAX) windows.delete(windows.keys().next().value as string)
  }
  const live = (key: string, now: number) => {
    const entry = windows.get(key)
    return entry && entry.endsAt > now ? entry : undefined
  }
  return {
    count(key: string, windowMs: number): Count {
      const now = Date.now()
      const entry = live(key, now) ?? { count: 0, endsAt: now + windowMs, confirmedIn: -1 }
      entry.count++
      keep(key, entry)
      return { current: entry.count, ttl: entry.endsAt - now }
    },
    /**
     * Redis counted `key` to `current`, with `ttl` left of its window, on connection `epoch`,
     * answering a request sent at `sentAt`: its window ends no earlier than `sentAt + ttl`, so this
     * window never outlives Redis's.
     */
    confirmed(key: string, { current, ttl }: Count, sentAt: number, epoch: number): void {
      const entry = live(key, Date.now())
      // The highest count wins: counts reserved ahead come back after later answers.
      keep(key, {
        count: Math.max(entry?.count ?? 0, current),
        endsAt: sentAt + ttl,
        confirmedIn: epoch,
      })
    },
    /** The count of `key` in its window unless Redis confirmed it on connection `epoch`. */
    unconfirmed(key: string, epoch: number): Count | undefined {
      const now = Date.now()
      const entry = live(key, now)
      if (!entry || entry.count === 0 || entry.confirmedIn === epoch) return undefined
      return { current: entry.count, ttl: entry.endsAt - now }
    },
    takeBack(key: string): void {
      const entry = windows.get(key)
      if (entry && entry.count > 0) entry.count--
    },
  }
}

/**
 * The counters of the limits: in Redis when REDIS_URL is set (shared by every instance), and in
 * this process when it is not, or while Redis cannot be reached. An outage therefore never lifts
 * the limits, and does not start them again: each instance counts on from the last count Redis
 * gave it for each caller in the window (a caller spread over several instances gets, on each, at
 * most the part of its limit that instance had not seen it spend). When Redis answers again (on a
 * new connection, or after failing), each key's first count there raises it to what this instance
 * knows, which gives back the counts a Redis restarted empty lost, and the ones counted here
 * meanwhile. The switch both ways is logged once, and `ehr_rate_limit_fallback_active` shows it.
 */
function counters(redis: Redis | undefined, log: FastifyBaseLogger, metrics: ServiceMetrics) {
  const local = localCounter()
  const shared = redis && redisWindowCounter(redis, { answerWithinMs: REDIS_ANSWER_WITHIN_MS })
  let degraded = false
  let retryAt = 0
  // Which connection to Redis, or which spell of it: what Redis confirmed in an earlier one may
  // have been lost since (a restart empties it), or miss what this process counted meanwhile.
  let epoch = 0
  redis?.on('ready', () => epoch++)

  const fallBack = (error: unknown) => {
    retryAt = Date.now() + REDIS_RETRY_INTERVAL_MS
    if (degraded) return
    degraded = true
    epoch++
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
    return local.count(key, windowMs)
  }
  if (redis && redis.status !== 'ready') fallBack(new Error(`not connected (${redis.status})`))

  /** Whether to count here without asking Redis: while it is down, between two tries. */
  const skipRedis = () => {
    if (!degraded) return false
    const now = Date.now()
    if (now < retryAt) return true
    // This request tries Redis; the others keep counting here until it has answered or failed.
    retryAt = now + REDIS_RETRY_INTERVAL_MS
    return false
  }

  // Without a promise when the count is at hand (counted here, or reserved ahead in Redis): most
  // requests of a busy caller take a reserved count, and each promise costs them a turn of the
  // microtask queue or two.
  const count = (key: string, windowMs: number, max: number): Count | Promise<Count> => {
    if (!shared) return local.count(key, windowMs)
    if (skipRedis()) return countLocally(key, windowMs)
    const sentAt = Date.now()
    const sentIn = epoch
    const counted = shared(`${NAMESPACE}${key}`, windowMs, max, local.unconfirmed(key, sentIn))
    if (!(counted instanceof Promise)) {
      local.confirmed(key, counted, sentAt, sentIn)
      return counted
    }
    return counted.then(
      (result) => {
        recovered()
        local.confirmed(key, result, sentAt, sentIn)
        return result
      },
      (error: unknown) => {
        fallBack(error)
        return countLocally(key, windowMs)
      },
    )
  }
  // Taken back where counting happens now: a count Redis took just before it failed stays spent
  // there, which errs on the side of the limit. This process's own count follows either way.
  const takeBack = async (key: string): Promise<void> => {
    local.takeBack(key)
    if (!redis || skipRedis()) return
    await takeBackCount(redis, `${NAMESPACE}${key}`, REDIS_ANSWER_WITHIN_MS).then(recovered, fallBack)
  }
  return { count, takeBack }
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
  const { Redis: RedisClient } = await import('../runtime/on-demand/ioredis.js')
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
 * RATE_LIMIT_CLIENTS), anyone else by IP (100); sign-ins apart, by their failures per account and
 * per IP (`signInAttempt`). With REDIS_URL the counters are shared by every instance; without it,
 * or while Redis is unreachable, each instance counts alone.
 */
const rateLimits: FastifyPluginAsync<{ settings: RateLimitSettings; encryptionKey: Buffer }> = async (
  app,
  { settings, encryptionKey },
) => {
  const redis = settings.redisUrl ? await connectRedis(settings.redisUrl, app.log) : undefined
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

  const counted = counters(redis, app.log, app.serviceMetrics)
  await app.register(rateLimit, {
    global: true,
    store: storeOf(counted.count),
    // The store always counts (in this process when Redis fails), so an error here is a bug and
    // must not silently lift the limit.
    skipOnError: false,
    timeWindow: settings.windowMs,
    keyGenerator: keyOf,
    max: (request, key) => {
      if (!key.startsWith('sub:')) return settings.anonymous
      return settings.clients.get(request.principal?.clientId ?? '') ?? settings.authenticated
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

  const attempt = signInAttempts(
    counted,
    settings.signIn,
    Buffer.from(hkdfSync('sha256', encryptionKey, '', ACCOUNT_KEY_INFO, 32)),
  )
  app.decorate('signInAttempt', (request, reply, username, check, failed) =>
    attempt({ address: request.ip, username }, check, {
      failed,
      refused: ({ limit, retryAfterSeconds }) => {
        app.serviceMetrics.rateLimited('sign-in')
        reply.header('retry-after', retryAfterSeconds)
        reply.header('x-ratelimit-limit', limit)
        reply.header('x-ratelimit-remaining', 0)
        reply.header(RESET_HEADER, retryAfterSeconds)
      },
    }),
  )

  // The plugin counts seconds until the reset; the API promises the Unix time of the reset.
  app.addHook('onSend', (_request, reply, payload, done) => {
    const secondsLeft = reply.getHeader(RESET_HEADER)
    if (secondsLeft !== undefined)
      reply.header(RESET_HEADER, Math.floor(Date.now() / 1000) + Number(secondsLeft))
    done(null, payload)
  })
}

export default fp(rateLimits, { name: 'rate-limits', dependencies: ['auth', 'metrics'] })
