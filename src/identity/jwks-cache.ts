import { createPublicKey, type JsonWebKey } from 'node:crypto'
import { AppError } from '../errors.js'

export interface JwksCacheOptions {
  /** The provider's current key set. */
  fetchKeys: () => Promise<JsonWebKey[]>
  /** How often the set is read again while it is in use. */
  refreshMs: number
  /** How long the last set read keeps verifying while the provider cannot be read. */
  maxStaleMs: number
  /** The most reads per minute, whatever asks for them (tokens naming unknown keys could be a flood). */
  readsPerMinute: number
  /** How long a request waits for a read. */
  timeoutMs: number
  /** A read failed: how old the set in use is (Infinity: there is none). */
  onReadFailure?: (ageMs: number) => void
  now?: () => number
}

const unknownKey = () => new AppError('AUTH_001', 'The token was signed by an unknown key')
const unreachable = () =>
  new AppError(
    'AUTH_001',
    'The identity provider did not answer; its keys could not be read. Try again shortly',
  )

interface Key {
  pem: string
  alg: string | undefined
}

/**
 * The external provider's signing keys, owned here rather than per key: every read replaces the
 * whole set, so a key the provider no longer publishes stops verifying at the next read (at most
 * `refreshMs` later); a failed read never replaces a good set, which keeps verifying for up to
 * `maxStaleMs`. A token of an unknown key makes a read (within `readsPerMinute`); a due refresh runs in the
 * background, so that requests do not wait on a slow provider while the set is still good.
 */
export function jwksCache(
  options: JwksCacheOptions,
): (header: { kid?: string; alg?: string }) => Promise<string> {
  const now = options.now ?? Date.now
  let keys = new Map<string, Key>()
  let readAt: number | undefined
  let lastAttempt = Number.NEGATIVE_INFINITY
  let attempts: number[] = []
  let reading: Promise<void> | undefined

  const mayRead = () => {
    attempts = attempts.filter((at) => now() - at < 60_000)
    return attempts.length < options.readsPerMinute
  }

  const age = () => (readAt === undefined ? Number.POSITIVE_INFINITY : now() - readAt)

  function read(): Promise<void> {
    reading ??= (async () => {
      lastAttempt = now()
      attempts.push(lastAttempt)
      try {
        const fetched = await options.fetchKeys()
        const next = new Map<string, Key>()
        for (const jwk of fetched as (JsonWebKey & { kid?: string; use?: string; alg?: string })[]) {
          if (!jwk.kid || (jwk.use !== undefined && jwk.use !== 'sig')) continue
          try {
            const pem = createPublicKey({ key: jwk, format: 'jwk' }).export({ type: 'spki', format: 'pem' })
            next.set(jwk.kid, { pem: String(pem), alg: jwk.alg })
          } catch {
            // A key this runtime cannot use (an unknown type) verifies nothing; the others still do.
          }
        }
        keys = next
        readAt = now()
      } catch {
        options.onReadFailure?.(age())
      } finally {
        reading = undefined
      }
    })()
    return reading
  }

  async function readWithin(timeoutMs: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined
    await Promise.race([
      read(),
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, timeoutMs)
      }),
    ])
    clearTimeout(timer)
  }

  return async ({ kid, alg }) => {
    if (!kid) throw unknownKey()
    const usable = age() <= options.maxStaleMs
    if ((!usable || !keys.has(kid)) && mayRead()) {
      await readWithin(options.timeoutMs)
    } else if (age() >= options.refreshMs && mayRead()) {
      void read()
    }
    if (age() > options.maxStaleMs) throw unreachable()
    const key = keys.get(kid)
    if (!key || (key.alg !== undefined && alg !== undefined && key.alg !== alg)) {
      // Unknown after a read that failed: the provider, not the token, is the likelier cause.
      throw lastAttempt > (readAt ?? Number.NEGATIVE_INFINITY) ? unreachable() : unknownKey()
    }
    return key.pem
  }
}
