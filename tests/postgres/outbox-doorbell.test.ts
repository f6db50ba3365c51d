import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { DatabaseHandle, Unlisten } from '../../db/connect.js'
import { openPostgres } from '../../db/postgres.js'
import { notifyingDoorbell, OUTBOX_CHANNEL } from '../../src/outbox/doorbell.js'
import { newPostgresDatabase } from '../helpers/app.js'

let url: string
let writer: DatabaseHandle
let listener: DatabaseHandle
let unlisten: Unlisten
const heard: (string | undefined)[] = []
let notifyStatements = 0

beforeAll(async () => {
  url = await newPostgresDatabase()
  writer = openPostgres({ url, poolMax: 2 })
  writer.observe({
    query: (_seconds, _error, text) => {
      if (text.includes('pg_notify')) notifyStatements += 1
    },
    connectionError: () => {},
  })
  listener = openPostgres({ url, poolMax: 1 })
  // The LISTEN is made in the background; the call without a payload says it has begun.
  await new Promise<void>((listening) => {
    void listener
      .listen(OUTBOX_CHANNEL, (payload) => {
        if (payload === undefined) listening()
        else heard.push(payload)
      })
      .then((stop) => {
        unlisten = stop
      })
  })
})
afterAll(async () => {
  await unlisten?.()
  await writer?.close()
  await listener?.close()
})

describe('the doorbell of an instance that runs no worker', () => {
  it('tells the other workers by NOTIFY, one statement at a time with everything announced meanwhile', async () => {
    const errors: unknown[] = []
    const ring = notifyingDoorbell(writer.db, (error) => errors.push(error))
    ring([1])
    ring([2])
    ring([2, 3])
    // The first statement is on its way: what comes now waits for it and goes out in one more.
    await new Promise((resolve) => setImmediate(resolve))
    for (let i = 0; i < 20; i++) ring([4])
    await expect.poll(() => new Set(heard), { timeout: 5000 }).toEqual(new Set(['1', '2', '3', '4']))
    await expect.poll(() => notifyStatements).toBe(2)

    // Work due without naming a webhook (a redelivery): the empty payload has every worker claim,
    // which covers the webhooks announced with it.
    ring([5])
    ring()
    await expect.poll(() => heard.at(-1), { timeout: 5000 }).toBe('')
    expect(heard).not.toContain('5')
    await expect.poll(() => notifyStatements).toBe(3)
    expect(errors).toEqual([])
  })
})
