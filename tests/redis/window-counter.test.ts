import { randomUUID } from 'node:crypto'
import { Redis } from 'ioredis'
import { afterAll, describe, expect, it, vi } from 'vitest'
import { defineCountCommand, redisWindowCounter } from '../../src/lib/redis-window-counter.js'

const redis = new Redis(process.env.TEST_REDIS_URL as string, { enableOfflineQueue: false })
defineCountCommand(redis)
afterAll(async () => {
  await redis.quit()
})

const WINDOW_MS = 60_000

describe('the Redis window counter', () => {
  it('sends the counts of one turn in one pipeline and gives every request a count of its own', async () => {
    await new Promise((resolve) => (redis.status === 'ready' ? resolve(null) : redis.once('ready', resolve)))
    const count = redisWindowCounter(redis)
    const [first, second] = [`test-counter:${randomUUID()}`, `test-counter:${randomUUID()}`]
    const pipelines = vi.spyOn(redis, 'pipeline')

    const turn = await Promise.all(
      [first, first, second, first, second, first, first].map((key) => count(key, WINDOW_MS)),
    )

    expect(pipelines).toHaveBeenCalledTimes(1)
    expect(turn.map(({ current }) => current)).toEqual([1, 2, 1, 3, 2, 4, 5])
    for (const { ttl } of turn) expect(ttl).toBeGreaterThan(WINDOW_MS - 5000)
    expect(await redis.get(first)).toBe('5')
    expect(await redis.pttl(first)).toBeGreaterThan(WINDOW_MS - 5000)

    const next = await count(first, WINDOW_MS)
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
    const count = redisWindowCounter(unreachable)
    const results = await Promise.allSettled([count('a', WINDOW_MS), count('b', WINDOW_MS)])
    expect(results.map(({ status }) => status)).toEqual(['rejected', 'rejected'])
    unreachable.disconnect()
  })
})
