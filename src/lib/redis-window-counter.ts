import type { Redis } from 'ioredis'

export interface Count {
  current: number
  /** Milliseconds until the window of the key ends. */
  ttl: number
}

// Adds a turn's requests to a key in one step, starts the window on the first of them, and says how
// long it has left (a key left without an expiry by an interrupted script gets one).
const COUNT_SCRIPT = `
local current = redis.call('INCRBY', KEYS[1], ARGV[2])
local ttl = redis.call('PTTL', KEYS[1])
if current == tonumber(ARGV[2]) or ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return {current, ttl}`

type Replies = [Error | null, [number, number] | undefined][]

/** A pipeline of `redis` once the counting script is defined on it. */
interface CountingPipeline {
  ehrRateLimitCount(key: string, windowMs: number, increment: number): unknown
  exec(): Promise<Replies | null>
}

/** Teaches `redis` the counting script. */
export function defineCountCommand(redis: Redis): void {
  redis.defineCommand('ehrRateLimitCount', { numberOfKeys: 1, lua: COUNT_SCRIPT })
}

interface Waiting {
  windowMs: number
  waiters: { resolve(count: Count): void; reject(error: unknown): void }[]
}

/**
 * Fixed-window counters in Redis, the requests counted in one turn of the event loop sent together
 * once the turn's other work is done: one pipeline (one write, one read) per turn, and one INCRBY
 * per key however many of its requests came in that turn. Each request still gets a count of its
 * own: the n requests of a key that raised it to `current` get `current - n + 1` … `current`, in the
 * order they asked. Under load this takes Redis from one round trip per request to one per turn.
 */
export function redisWindowCounter(redis: Redis): (key: string, windowMs: number) => Promise<Count> {
  let pending: Map<string, Waiting> | undefined

  async function send(batch: Map<string, Waiting>): Promise<void> {
    const pipeline = redis.pipeline() as unknown as CountingPipeline
    for (const [key, { windowMs, waiters }] of batch)
      pipeline.ehrRateLimitCount(key, windowMs, waiters.length)
    const replies = await pipeline.exec().catch((error: unknown) => error as Error)
    let index = 0
    for (const { waiters } of batch.values()) {
      const [error, reply]: Replies[number] =
        replies instanceof Error ? [replies, undefined] : (replies?.[index++] ?? [null, undefined])
      if (!reply) {
        for (const waiter of waiters) waiter.reject(error ?? new Error('no reply from the rate limit store'))
        continue
      }
      const [current, ttl] = reply
      const first = current - waiters.length + 1
      for (const [position, waiter] of waiters.entries()) waiter.resolve({ current: first + position, ttl })
    }
  }

  function flush(): void {
    const batch = pending as Map<string, Waiting>
    pending = undefined
    void send(batch)
  }

  return (key, windowMs) =>
    new Promise((resolve, reject) => {
      if (!pending) {
        pending = new Map()
        setImmediate(flush)
      }
      const waiting = pending.get(key)
      if (waiting) waiting.waiters.push({ resolve, reject })
      else pending.set(key, { windowMs, waiters: [{ resolve, reject }] })
    })
}
