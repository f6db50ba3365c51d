import { randomInt } from 'node:crypto'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../src/app.js'
import { buildTestApp } from '../helpers/app.js'

const redisUrl = process.env.TEST_REDIS_URL as string
let first: App
let second: App
let wide: App
let redis: Redis

const WIDE_LIMIT = 200

beforeAll(async () => {
  const environment = { REDIS_URL: redisUrl, RATE_LIMIT_ANONYMOUS: '4' }
  first = await buildTestApp(environment)
  second = await buildTestApp(environment)
  wide = await buildTestApp({ REDIS_URL: redisUrl, RATE_LIMIT_ANONYMOUS: String(WIDE_LIMIT) })
  redis = new Redis(redisUrl)
})
afterAll(async () => {
  await first.close()
  await second.close()
  await wide.close()
  redis.disconnect()
})

const newAddress = () => `10.${randomInt(256)}.${randomInt(256)}.${randomInt(1, 255)}`

describe('rate limits with REDIS_URL', () => {
  it('share one counter between two instances', async () => {
    const remoteAddress = newAddress()
    const statuses: number[] = []
    for (const app of [first, second, first, second, first, second]) {
      statuses.push((await app.inject({ url: '/api/patients', remoteAddress })).statusCode)
    }
    expect(statuses).toEqual([401, 401, 401, 401, 429, 429])
  })

  it('give a caller of one instance every count once, all held in Redis, in bursts far from the limit', async () => {
    const remoteAddress = newAddress()
    const remaining: number[] = []
    for (let burst = 0; burst < 12; burst++) {
      const answers = await Promise.all(
        Array.from({ length: 1 + (burst % 5) }, () => wide.inject({ url: '/api/patients', remoteAddress })),
      )
      remaining.push(...answers.map((answer) => Number(answer.headers['x-ratelimit-remaining'])))
    }
    const sent = remaining.length
    expect([...remaining].sort((a, b) => b - a)).toEqual(
      Array.from({ length: sent }, (_, index) => WIDE_LIMIT - 1 - index),
    )
    // Redis holds them all, and at most a tenth of what was left besides: counts reserved ahead
    // that the caller has not come back for yet.
    const inRedis = Number(await redis.get(`ehr-rate-limit:ip:${remoteAddress}`))
    expect(inRedis).toBeGreaterThanOrEqual(sent)
    expect(inRedis - sent).toBeLessThanOrEqual(Math.floor((WIDE_LIMIT - sent) / 10))
  })

  it('hold one instance’s caller to the limit exactly, however many requests come at once', async () => {
    const remoteAddress = newAddress()
    const statuses: number[] = []
    for (let burst = 0; burst < 9; burst++) {
      const answers = await Promise.all(
        Array.from({ length: 25 }, () => wide.inject({ url: '/api/patients', remoteAddress })),
      )
      statuses.push(...answers.map((answer) => answer.statusCode))
    }
    expect(statuses.filter((status) => status === 401)).toHaveLength(WIDE_LIMIT)
    expect(statuses.filter((status) => status === 429)).toHaveLength(9 * 25 - WIDE_LIMIT)
  })

  it('hold a caller of two instances to the limit exactly, in bursts spread over both', async () => {
    const wideSecond = await buildTestApp({ REDIS_URL: redisUrl, RATE_LIMIT_ANONYMOUS: String(WIDE_LIMIT) })
    try {
      const remoteAddress = newAddress()
      const statuses: number[] = []
      for (let burst = 0; burst < 12; burst++) {
        const answers = await Promise.all(
          Array.from({ length: 25 }, (_, index) =>
            (index % 2 ? wide : wideSecond).inject({ url: '/api/patients', remoteAddress }),
          ),
        )
        statuses.push(...answers.map((answer) => answer.statusCode))
      }
      expect(statuses.filter((status) => status === 401)).toHaveLength(WIDE_LIMIT)
      expect(statuses.filter((status) => status === 429)).toHaveLength(12 * 25 - WIDE_LIMIT)
    } finally {
      await wideSecond.close()
    }
  })
})
