import { describe, expect, it } from 'vitest'
import type { Success } from '../../../src/outbox/deliveries.js'
import { SuccessBatch } from '../../../src/outbox/success-batch.js'

const success = (deliveryId: number): Success => ({
  deliveryId,
  webhookId: 1,
  attemptedAt: new Date(),
  statusCode: 204,
  latencyMs: 3,
})

describe('SuccessBatch', () => {
  it('writes successes added in the same turn in one batch', async () => {
    const writes: number[][] = []
    const batch = new SuccessBatch(async (items) => {
      writes.push(items.map((item) => item.deliveryId))
    })
    await Promise.all([batch.add(success(1)), batch.add(success(2)), batch.add(success(3))])
    expect(writes).toEqual([[1, 2, 3]])
  })

  it('gathers what arrives during a write into the next batch', async () => {
    const writes: number[][] = []
    let release: () => void = () => {}
    const batch = new SuccessBatch(async (items) => {
      writes.push(items.map((item) => item.deliveryId))
      if (writes.length === 1) await new Promise<void>((resolve) => (release = resolve))
    })
    const first = batch.add(success(1))
    await new Promise((resolve) => setImmediate(resolve))
    const later = [batch.add(success(2)), batch.add(success(3))]
    release()
    await Promise.all([first, ...later])
    expect(writes).toEqual([[1], [2, 3]])
  })

  it('tells every caller of a failed batch, and writes the next batch all the same', async () => {
    let calls = 0
    const batch = new SuccessBatch(async () => {
      calls += 1
      if (calls === 1) throw new Error('database unavailable')
    })
    const failed = await Promise.allSettled([batch.add(success(1)), batch.add(success(2))])
    expect(failed.map((result) => result.status)).toEqual(['rejected', 'rejected'])
    await expect(batch.add(success(3))).resolves.toBeUndefined()
    expect(calls).toBe(2)
  })
})
