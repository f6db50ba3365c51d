import { randomBytes, type ScryptOptions, scrypt, timingSafeEqual } from 'node:crypto'
import type { HashingPool, ScryptJob } from './hashing-pool.js'

// OWASP's scrypt profile N=2^14, r=8, p=5: 16 MiB per hash, so concurrent logins cannot exhaust
// memory. The parameters are stored with each hash, so they can be raised later without a reset.
const COST = { N: 2 ** 14, r: 8, p: 5 }
const KEY_LENGTH = 32

// The hashing pools of the apps open in this process, the newest last: hashes run on the newest.
// One app per process in service; tests open several, one after another.
const pools: HashingPool[] = []

/**
 * Hashes on `pool` until the returned function is called (when its app closes). Without a pool,
 * as in the command-line tools, hashes run on libuv's threads.
 */
export function hashOn(pool: HashingPool): () => void {
  pools.push(pool)
  return () => {
    const at = pools.lastIndexOf(pool)
    if (at >= 0) pools.splice(at, 1)
  }
}

/**
 * Runs a check that leads to a hash (an account's lookup, then its hash) if the pool has room for
 * it now, else throws HashingBusy without running it (identity/hashing-pool.ts).
 */
export function withHashing<T>(work: () => Promise<T>): Promise<T> {
  const pool = pools.at(-1)
  return pool ? pool.admitted(work) : work()
}

function onLibuv({ password, salt, keyLength, options }: ScryptJob): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scrypt(password, salt, keyLength, options, (error, key) => (error ? reject(error) : resolve(key)))
  })
}

function derive(password: string, salt: Buffer, options: ScryptOptions): Promise<Buffer> {
  const job = {
    password: password.normalize('NFKC'),
    salt,
    keyLength: KEY_LENGTH,
    options: { ...options, maxmem: 64 * 1024 * 1024 },
  }
  const pool = pools.at(-1)
  return pool ? pool.run(job) : onLibuv(job)
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16)
  const key = await derive(password, salt, COST)
  return ['scrypt', COST.N, COST.r, COST.p, salt.toString('base64'), key.toString('base64')].join('$')
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, salt, key] = stored.split('$')
  if (scheme !== 'scrypt' || !salt || !key) return false
  const expected = Buffer.from(key, 'base64')
  const actual = await derive(password, Buffer.from(salt, 'base64'), {
    N: Number(n),
    r: Number(r),
    p: Number(p),
  })
  return actual.length === expected.length && timingSafeEqual(actual, expected)
}

/** A hash of a random password: compared against when no user matches, so both paths cost the same. */
let decoy: Promise<string> | undefined
export const decoyHash = () => {
  if (!decoy) {
    decoy = hashPassword(randomBytes(16).toString('hex'))
    // A refusal (a busy hashing pool) is not kept: the next sign-in makes the decoy again.
    decoy.catch(() => {
      decoy = undefined
    })
  }
  return decoy
}
