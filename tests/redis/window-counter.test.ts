import { randomUUID } from 'node:crypto'
import { Redis } from 'ioredis'
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest'
import { startTcpProxy } from '../../scripts/lib/tcp-proxy.js'
import { defineCountCommand, leaseSize, redisWindowCounter } from '../../src/lib/redis-window-counter.js'

const redis = new Redis(process.env.TEST_REDIS_URL as string, { enableOfflineQueue: false })
defineCountCommand(redis)
afterAll(async () => {
  await redis.quit()
})
afterEach(() => {
  vi.restoreAllMocks()
})

const WINDOW_MS = 60_000
const FAR = 1_000_000
const ready = () =>
  new Promise((resolve) => (redis.status === 'ready' ? resolve(null) : redis.once('ready', resolve)))
const newKey = () => `test-counter:${randomUUID()}`

describe('the Redis window counter', () => {
  it('sends the counts of one turn in one pipeline and gives every request a count of its own', async () => {
    await ready()
    const count = redisWindowCounter(redis, { answerWithinMs: 500 })
    const [first, second] = [`test-counter:${randomUUID()}`, `test-counter:${randomUUID()}`]
    const pipelines = vi.spyOn(redis, 'pipeline')

    const turn = await Promise.all(
      [first, first, second, first, second, first, first].map((key) => count(key, WINDOW_MS, FAR)),
    )

    expect(pipelines).toHaveBeenCalledTimes(1)
    expect(turn.map(({ current }) => current)).toEqual([1, 2, 1, 3, 2, 4, 5])
    for (const { ttl } of turn) expect(ttl).toBeGreaterThan(WINDOW_MS - 5000)
    expect(await redis.get(first)).toBe('5')
    expect(await redis.pttl(first)).toBeGreaterThan(WINDOW_MS - 5000)

    const next = await count(first, WINDOW_MS, FAR)
    expect(next.current).toBe(6)
    expect(pipelines).toHaveBeenCalledTimes(2)
    await redis.del(first, second)
  })

  it('fails every count of the turn when Redis cannot be reached', async () => {
    const unreachable = new Redis('redis://127.0.0.1:1', {
      enableOfflineQueue: false,
      lazyConnect: true,
      maxRetriesPerRequest: 0,
    })
    defineCountCommand(unreachable)
    const count = redisWindowCounter(unreachable, { answerWithinMs: 500 })
    const results = await Promise.allSettled([count('a', WINDOW_MS, FAR), count('b', WINDOW_MS, FAR)])
    expect(results.map(({ status }) => status)).toEqual(['rejected', 'rejected'])
    unreachable.disconnect()
  })

  it('fails the counts of a pipeline not answered in time, as from a Redis that stopped answering', async () => {
    const { hostname, port } = new URL(process.env.TEST_REDIS_URL as string)
    const proxy = await startTcpProxy(hostname, Number(port || 6379))
    const stalled = new Redis(`redis://127.0.0.1:${proxy.port}`, { enableOfflineQueue: false })
    defineCountCommand(stalled)
    try {
      await new Promise((resolve) => stalled.once('ready', resolve))
      const count = redisWindowCounter(stalled, { answerWithinMs: 100 })
      expect((await count(newKey(), WINDOW_MS, FAR)).current).toBe(1)
      proxy.blackHole()
      const started = performance.now()
      await expect(count(newKey(), WINDOW_MS, FAR)).rejects.toThrow('did not answer within 100 ms')
      expect(performance.now() - started).toBeLessThan(2000)
    } finally {
      stalled.disconnect()
      await proxy.cut()
    }
  })

  it('takes an answer that came while the event loop was kept busy past the deadline', async () => {
    await ready()
    const count = redisWindowCounter(redis, { answerWithinMs: 20 })
    const key = newKey()
    // The counting script is loaded into Redis by a first count, so the next is one round trip.
    await count(newKey(), WINDOW_MS, FAR)
    const counted = count(key, WINDOW_MS, FAR)
    // Once the pipeline is out, the loop is held far past the deadline while Redis answers.
    await new Promise((resolve) => setImmediate(resolve))
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 300)
    expect((await counted).current).toBe(1)
    expect(await redis.get(key)).toBe('1')
    await redis.del(key)
  })

  it('sizes a reservation by the caller’s rate in the window so far and by what it has left', () => {
    // 200 counts in the first second of a window: 200/s, so 10 for the next 50 ms.
    expect(leaseSize(200, WINDOW_MS - 10, WINDOW_MS, FAR)).toBe(10)
    // The same 200 over 20 s: 10/s, less than one in 50 ms.
    expect(leaseSize(200, WINDOW_MS - 20_000, WINDOW_MS, FAR)).toBe(0)
    // Never more than a tenth of what is left, nor past the limit.
    expect(leaseSize(200, WINDOW_MS - 10, WINDOW_MS, 250)).toBe(5)
    expect(leaseSize(200, WINDOW_MS - 10, WINDOW_MS, 205)).toBe(0)
    expect(leaseSize(300, WINDOW_MS - 10, WINDOW_MS, 250)).toBe(0)
    expect(leaseSize(500_000, WINDOW_MS - 10, WINDOW_MS, FAR)).toBe(1000)
  })

  it('reserves counts ahead for a caller counting fast far from its limit, and hands them out without Redis', async () => {
    await ready()
    const count = redisWindowCounter(redis, { answerWithinMs: 500 })
    const key = newKey()
    const pipelines = vi.spyOn(redis, 'pipeline')

    await Promise.all(Array.from({ length: 200 }, () => count(key, WINDOW_MS, FAR)))
    expect(pipelines).toHaveBeenCalledTimes(1)
    expect(await redis.get(key)).toBe('200')

    // The next count takes its own and reserves 10 more in the same command.
    expect((await count(key, WINDOW_MS, FAR)).current).toBe(201)
    expect(pipelines).toHaveBeenCalledTimes(2)
    expect(await redis.get(key)).toBe('211')

    const leased: number[] = []
    for (let index = 0; index < 10; index++) leased.push((await count(key, WINDOW_MS, FAR)).current)
    expect(leased).toEqual(Array.from({ length: 10 }, (_, index) => 202 + index))
    expect(pipelines).toHaveBeenCalledTimes(2)

    expect((await count(key, WINDOW_MS, FAR)).current).toBe(212)
    expect(pipelines).toHaveBeenCalledTimes(3)
    await redis.del(key)
  })

  it('counts one by one, reserving nothing, near the limit', async () => {
    await ready()
    const count = redisWindowCounter(redis, { answerWithinMs: 500 })
    const key = newKey()
    await Promise.all(Array.from({ length: 200 }, () => count(key, WINDOW_MS, 205)))
    for (let expected = 201; expected <= 207; expected++) {
      expect((await count(key, WINDOW_MS, 205)).current).toBe(expected)
      expect(await redis.get(key)).toBe(String(expected))
    }
    await redis.del(key)
  })

  it('drops what it reserved when the window ends', async () => {
    await ready()
    const count = redisWindowCounter(redis, { answerWithinMs: 500 })
    const key = newKey()
    // Long enough that no stall of a busy machine ends the window before the second count.
    const shortWindowMs = 1000
    await Promise.all(Array.from({ length: 200 }, () => count(key, shortWindowMs, FAR)))
    await count(key, shortWindowMs, FAR)
    expect(await redis.get(key)).toBe('211')

    await new Promise((resolve) => setTimeout(resolve, shortWindowMs + 100))
    const next = await count(key, shortWindowMs, FAR)
    expect(next.current).toBe(1)
    expect(next.ttl).toBeGreaterThan(shortWindowMs - 100)
    expect(await redis.get(key)).toBe('1')
    await redis.del(key)
  })

  it('raises a key Redis lost to the floor it is given, in the window the floor had left', async () => {
    await ready()
    const count = redisWindowCounter(redis, { answerWithinMs: 500 })
    const key = newKey()
    // As after a restart: the key is gone, and the instance knew it at 40 with 30 s left.
    const restored = await count(key, WINDOW_MS, FAR, { current: 40, ttl: 30_000 })
    expect(restored.current).toBe(41)
    expect(restored.ttl).toBe(30_000)
    expect(await redis.get(key)).toBe('41')
    expect(await redis.pttl(key)).toBeLessThanOrEqual(30_000)

    // A key that holds more than the floor keeps its count and its window.
    expect((await count(key, WINDOW_MS, FAR, { current: 10, ttl: 50_000 })).current).toBe(42)
    expect(await redis.pttl(key)).toBeLessThanOrEqual(30_000)
    // One that holds less (counts taken while Redis was away) is raised, its window kept.
    const raised = await count(key, WINDOW_MS, FAR, { current: 100, ttl: 50_000 })
    expect(raised.current).toBe(101)
    expect(raised.ttl).toBeLessThanOrEqual(30_000)
    await redis.del(key)
  })

  it('never gives two instances’ callers the same count, and Redis holds every count handed out', async () => {
    await ready()
    const instances = [
      redisWindowCounter(redis, { answerWithinMs: 500 }),
      redisWindowCounter(redis, { answerWithinMs: 500 }),
    ]
    const key = newKey()
    const counts: number[] = []
    for (let turn = 0; turn < 40; turn++) {
      const answers = await Promise.all(
        Array.from({ length: 1 + (turn % 7) * 10 }, (_, index) =>
          (instances[index % 2] as (typeof instances)[number])(key, WINDOW_MS, FAR),
        ),
      )
      counts.push(...answers.map(({ current }) => current))
    }
    expect(new Set(counts).size).toBe(counts.length)
    expect(Number(await redis.get(key))).toBeGreaterThanOrEqual(Math.max(...counts))
    await redis.del(key)
  })
})
