import type { Redis } from 'ioredis'
import { withinDeadline } from './deadline.js'

export interface Count {
  current: number
  /** Milliseconds until the window of the key ends. */
  ttl: number
}

// Adds a turn's requests to a key in one step, starts the window on the first of them, and says how
// long it has left (a key left without an expiry by an interrupted script gets one). With a floor
// (ARGV[3], what this instance knows the key held, in a window that ends in ARGV[4] ms), a count
// below it means Redis lost counts (it restarted empty, or was not told of the requests counted
// while it could not be reached): the key is raised to the floor, its window kept or restored.
const COUNT_SCRIPT = `
local increment = tonumber(ARGV[2])
local floor = tonumber(ARGV[3])
local current = redis.call('INCRBY', KEYS[1], increment)
local ttl = redis.call('PTTL', KEYS[1])
if current < floor + increment then
  current = floor + increment
  redis.call('SET', KEYS[1], current, 'KEEPTTL')
  if ttl < 0 then
    redis.call('PEXPIRE', KEYS[1], ARGV[4])
    ttl = tonumber(ARGV[4])
  end
elseif current == increment or ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return {current, ttl}`

// Takes one count back from a key's window, if the window still holds one.
const TAKE_BACK_SCRIPT = `
local current = tonumber(redis.call('GET', KEYS[1]) or '0')
if current > 0 then return redis.call('DECR', KEYS[1]) end
return current`

type Replies = [Error | null, [number, number] | undefined][]

// Keys with counts reserved ahead (or a reservation planned); past this many the oldest is forgotten.
const LEASES_MAX = 10_000

/** A pipeline of `redis` once the counting script is defined on it. */
interface CountingPipeline {
  ehrRateLimitCount(
    key: string,
    windowMs: number,
    increment: number,
    floor: number,
    floorTtl: number,
  ): unknown
  exec(): Promise<Replies | null>
}

/** Teaches `redis` the counting scripts. */
export function defineCountCommand(redis: Redis): void {
  redis.defineCommand('ehrRateLimitCount', { numberOfKeys: 1, lua: COUNT_SCRIPT })
  redis.defineCommand('ehrRateLimitTakeBack', { numberOfKeys: 1, lua: TAKE_BACK_SCRIPT })
}

/**
 * Takes back one count of `key` (a request that, after all, does not count), answered within
 * `answerWithinMs` or failed. Counts reserved ahead for the key are left as they are.
 */
export async function takeBackCount(redis: Redis, key: string, answerWithinMs: number): Promise<void> {
  const command = redis as unknown as { ehrRateLimitTakeBack(key: string): Promise<number> }
  await withinDeadline(
    command.ehrRateLimitTakeBack(key),
    answerWithinMs,
    () => new Error(`the rate limit store did not answer within ${answerWithinMs} ms`),
  )
}

interface Waiting {
  windowMs: number
  max: number
  floor: Count | undefined
  /** Counts reserved ahead with this turn's, set when the turn is sent. */
  extra: number
  waiters: { resolve(count: Count): void; reject(error: unknown): void }[]
}

// A caller counting faster than one request per LEASE_MS gets counts reserved ahead: about
// LEASE_MS of its requests at its rate in the window so far (measured over at least
// RATE_FLOOR_MS, so the first requests of a window do not look like a flood).
const LEASE_MS = 50
const RATE_FLOOR_MS = 1000
// At most this share of what the caller has left, so that near the limit the reservations
// shrink to nothing and the last counts go out one by one, exactly as asked.
const HEADROOM_SHARE = 10
const LEASE_MAX = 1000

/** How many counts to reserve ahead for a key that Redis has just counted to `current`. */
export function leaseSize(current: number, ttl: number, windowMs: number, max: number): number {
  const perMs = current / Math.max(windowMs - ttl, RATE_FLOOR_MS)
  const size = Math.min(Math.floor(perMs * LEASE_MS), Math.floor((max - current) / HEADROOM_SHARE), LEASE_MAX)
  return Math.max(size, 0)
}

/** Counts reserved in Redis for one key and not yet handed out, in the order they were reserved. */
interface Lease {
  ranges: { next: number; last: number }[]
  endsAt: number
  /** How many to reserve with the key's next count. */
  ahead: number
}

/**
 * A count reserved ahead is handed out at once; any other waits for Redis. `floor` is what the
 * caller knows the key to hold (`current`) in a window with `ttl` left, which Redis's count is
 * raised to if it fell below.
 */
export type WindowCounter = (
  key: string,
  windowMs: number,
  max: number,
  floor?: Count,
) => Count | Promise<Count>

/**
 * Fixed-window counters in Redis, the requests counted in one turn of the event loop sent together
 * once the turn's other work is done: one pipeline (one write, one read) per turn, and one INCRBY
 * per key however many of its requests came in that turn. Each request still gets a count of its
 * own: the n requests of a key that raised it to `current` get `current - n + 1` … `current`, in the
 * order they asked.
 *
 * A key far from its limit and counting fast (a sync job, a busy integration) also reserves counts
 * ahead in the same INCRBY (`leaseSize`), and its next requests take those without asking Redis:
 * one command per key every LEASE_MS or so instead of one per turn. Redis holds every count handed
 * out, so no caller ever gets past its limit, on any number of instances; the cost is that counts
 * an instance reserved and its caller never came back for are spent (at most a tenth of what the
 * caller had left, and never past the end of the window).
 *
 * A count asked with a floor (what the caller knew of the key before Redis went away or came back)
 * raises the key to it when Redis holds less, so counts a restarted Redis lost are not handed out
 * again; the key's reservations are dropped then, as Redis may no longer hold them.
 *
 * A pipeline not answered within `answerWithinMs` fails its counts (the caller counts them itself).
 */
export function redisWindowCounter(
  redis: Redis,
  { answerWithinMs }: { answerWithinMs: number },
): WindowCounter {
  let pending: Map<string, Waiting> | undefined
  const leases = new Map<string, Lease>()

  function takeLeased(key: string): Count | undefined {
    const lease = leases.get(key)
    if (!lease) return undefined
    const now = Date.now()
    if (now >= lease.endsAt) {
      leases.delete(key)
      return undefined
    }
    const range = lease.ranges[0]
    if (!range) return undefined
    const current = range.next++
    if (range.next > range.last) lease.ranges.shift()
    if (lease.ranges.length === 0 && lease.ahead === 0) leases.delete(key)
    return { current, ttl: lease.endsAt - now }
  }

  /** After a count: keeps what was reserved ahead, and how much to reserve with the key's next one. */
  function keepLease(
    key: string,
    reserved: Lease['ranges'][number] | undefined,
    ttl: number,
    ahead: number,
    windowStarted: boolean,
  ) {
    const now = Date.now()
    const endsAt = now + ttl
    let lease = leases.get(key)
    // Counts left from an earlier window count for nothing in this one.
    if (!lease || windowStarted || lease.endsAt <= now) {
      leases.delete(key)
      if (!reserved && ahead === 0) return
      lease = { ranges: [], endsAt, ahead }
      leases.set(key, lease)
      if (leases.size > LEASES_MAX) leases.delete(leases.keys().next().value as string)
    }
    lease.endsAt = endsAt
    lease.ahead = ahead
    if (reserved) lease.ranges.push(reserved)
    if (lease.ranges.length === 0 && ahead === 0) leases.delete(key)
  }

  async function send(batch: Map<string, Waiting>): Promise<void> {
    const pipeline = redis.pipeline() as unknown as CountingPipeline
    for (const [key, waiting] of batch) {
      const { floor } = waiting
      // Reservations made before Redis lost counts may not be held there any more: dropped.
      if (floor) leases.delete(key)
      const lease = leases.get(key)
      waiting.extra = lease && lease.endsAt > Date.now() ? lease.ahead : 0
      pipeline.ehrRateLimitCount(
        key,
        waiting.windowMs,
        waiting.waiters.length + waiting.extra,
        floor?.current ?? 0,
        Math.max(floor?.ttl ?? 1, 1),
      )
    }
    const replies = await withinDeadline(
      pipeline.exec(),
      answerWithinMs,
      () => new Error(`the rate limit store did not answer within ${answerWithinMs} ms`),
    ).catch((error: unknown) => error as Error)
    let index = 0
    for (const [key, { windowMs, max, extra, waiters }] of batch) {
      const [error, reply]: Replies[number] =
        replies instanceof Error ? [replies, undefined] : (replies?.[index++] ?? [null, undefined])
      if (!reply) {
        for (const waiter of waiters) waiter.reject(error ?? new Error('no reply from the rate limit store'))
        continue
      }
      const [current, ttl] = reply
      const first = current - extra - waiters.length + 1
      for (const [position, waiter] of waiters.entries()) waiter.resolve({ current: first + position, ttl })
      const reserved = extra > 0 ? { next: current - extra + 1, last: current } : undefined
      keepLease(key, reserved, ttl, leaseSize(current, ttl, windowMs, max), first === 1)
    }
  }

  function flush(): void {
    const batch = pending as Map<string, Waiting>
    pending = undefined
    void send(batch)
  }

  return (key, windowMs, max, floor) => {
    const leased = floor ? undefined : takeLeased(key)
    if (leased) return leased
    return new Promise((resolve, reject) => {
      if (!pending) {
        pending = new Map()
        setImmediate(flush)
      }
      const waiting = pending.get(key)
      if (!waiting) pending.set(key, { windowMs, max, floor, extra: 0, waiters: [{ resolve, reject }] })
      else {
        waiting.waiters.push({ resolve, reject })
        if (floor && floor.current > (waiting.floor?.current ?? 0)) waiting.floor = floor
      }
    })
  }
}
