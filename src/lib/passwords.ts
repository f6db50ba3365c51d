import { randomBytes, type ScryptOptions, scrypt, timingSafeEqual } from 'node:crypto'

// OWASP's scrypt profile N=2^14, r=8, p=5: 16 MiB per hash, so concurrent logins cannot exhaust
// memory. The parameters are stored with each hash, so they can be raised later without a reset.
const COST = { N: 2 ** 14, r: 8, p: 5 }
const KEY_LENGTH = 32

function derive(password: string, salt: Buffer, options: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scrypt(
      password.normalize('NFKC'),
      salt,
      KEY_LENGTH,
      { ...options, maxmem: 64 * 1024 * 1024 },
      (error, key) => (error ? reject(error) : resolve(key)),
    )
  })
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
  decoy ??= hashPassword(randomBytes(16).toString('hex'))
  return decoy
}
