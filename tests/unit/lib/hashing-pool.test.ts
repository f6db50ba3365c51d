import { randomBytes, scryptSync } from 'node:crypto'
import { afterEach, describe, expect, it } from 'vitest'
import { HashingBusy, type HashingPool, hashingPool } from '../../../src/identity/hashing-pool.js'
import { hashOn, hashPassword, verifyPassword } from '../../../src/identity/password-hashing.js'

// The service's own cost (identity/password-hashing.ts): a few hundred milliseconds per hash.
const job = () => ({
  password: 'correct horse battery staple',
  salt: randomBytes(16),
  keyLength: 32,
  options: { N: 2 ** 14, r: 8, p: 5, maxmem: 64 * 1024 * 1024 },
})

const pools: HashingPool[] = []
const newPool = (settings: { threads: number; queue: number; waitMs: number }) => {
  const pool = hashingPool(settings)
  pools.push(pool)
  return pool
}
afterEach(async () => {
  await Promise.all(pools.splice(0).map((pool) => pool.close()))
})

describe('hashingPool', () => {
  it('derives the same key as scrypt on the main thread', async () => {
    const pool = newPool({ threads: 1, queue: 0, waitMs: 1000 })
    const asked = job()
    const key = await pool.run(asked)
    expect(key.equals(scryptSync(asked.password, asked.salt, asked.keyLength, asked.options))).toBe(true)
  })

  it('refuses a hash at once when the threads are busy and the queue is full', async () => {
    const pool = newPool({ threads: 1, queue: 1, waitMs: 60_000 })
    const running = pool.run(job())
    const waiting = pool.run(job())
    await expect(pool.run(job())).rejects.toBeInstanceOf(HashingBusy)
    expect(pool.load).toMatchObject({ threads: 1, busy: 1, waiting: 1 })
    await Promise.all([running, waiting])
  })

  it('refuses a hash that waited longer than waitMs, with that wait as Retry-After', async () => {
    // A hash takes far longer than this wait (five passes over 16 MiB).
    const pool = newPool({ threads: 1, queue: 5, waitMs: 100 })
    const running = pool.run(job())
    const refusal = await pool.run(job()).catch((error: unknown) => error)
    expect(refusal).toBeInstanceOf(HashingBusy)
    expect(refusal).toMatchObject({ code: 'RATE_001', status: 429, retryAfterSeconds: 1 })
    expect(pool.load.waiting).toBe(0)
    await running
  })

  it('refuses what waits and ends its threads on close', async () => {
    const pool = newPool({ threads: 1, queue: 1, waitMs: 60_000 })
    const running = pool.run(job())
    const waiting = pool.run(job())
    const outcomes = Promise.allSettled([running, waiting])
    expect(pool.load.threads).toBe(1)
    await pool.close()
    for (const outcome of await outcomes) {
      expect(outcome.status).toBe('rejected')
      expect((outcome as PromiseRejectedResult).reason).toBeInstanceOf(HashingBusy)
    }
    expect(pool.load).toMatchObject({ threads: 0, waiting: 0 })
    await expect(pool.run(job())).rejects.toBeInstanceOf(HashingBusy)
  })

  it('admits no more checks than threads and queue places', async () => {
    const pool = newPool({ threads: 1, queue: 1, waitMs: 60_000 })
    let release = () => {}
    const held = new Promise<void>((resolve) => {
      release = resolve
    })
    const admitted = [pool.admitted(() => held), pool.admitted(() => held)]
    await expect(pool.admitted(async () => 'ran')).rejects.toBeInstanceOf(HashingBusy)
    release()
    await Promise.all(admitted)
    await expect(pool.admitted(async () => 'ran')).resolves.toBe('ran')
  })
})

describe('hashOn', () => {
  it('hashes on the pool, in the stored format libuv’s scrypt verifies, until released', async () => {
    const pool = newPool({ threads: 1, queue: 0, waitMs: 1000 })
    const release = hashOn(pool)
    let stored: string
    try {
      const hashing = hashPassword('correct horse battery staple')
      expect(pool.load.busy).toBe(1)
      stored = await hashing
    } finally {
      release()
    }
    expect(stored).toMatch(/^scrypt\$16384\$8\$5\$/)
    expect(await verifyPassword('correct horse battery staple', stored)).toBe(true)
    expect(pool.load.busy).toBe(0)
  })
})
