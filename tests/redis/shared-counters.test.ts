import { randomInt } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../src/app.js'
import { buildTestApp } from '../helpers/app.js'

const redisUrl = process.env.TEST_REDIS_URL as string
let first: App
let second: App

beforeAll(async () => {
  const environment = { REDIS_URL: redisUrl, RATE_LIMIT_ANONYMOUS: '4' }
  first = await buildTestApp(environment)
  second = await buildTestApp(environment)
})
afterAll(async () => {
  await first.close()
  await second.close()
})

describe('rate limits with REDIS_URL', () => {
  it('share one counter between two instances', async () => {
    const remoteAddress = `10.${randomInt(256)}.${randomInt(256)}.${randomInt(1, 255)}`
    const statuses: number[] = []
    for (const app of [first, second, first, second, first, second]) {
      statuses.push((await app.inject({ url: '/api/patients', remoteAddress })).statusCode)
    }
    expect(statuses).toEqual([401, 401, 401, 401, 429, 429])
  })
})
