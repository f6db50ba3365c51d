import type { Db } from '../../db/database.js'
import { AppError } from '../errors.js'
import { PROVIDER_TIMEOUT_MS, providerKeys } from './external-provider.js'
import { jwksCache } from './jwks-cache.js'
import { loadVerificationKeys } from './signing-keys.js'

interface TokenHeader {
  kid?: string
  alg?: string
}

/** Finds the public key (PEM) that must have signed a token with this header. */
export type KeyResolver = (header: TokenHeader) => Promise<string>

const unknownKey = () => new AppError('AUTH_001', 'The token was signed by an unknown key')

// Another instance may have added a key; look again, but not more often than this.
const RELOAD_INTERVAL_MS = 10_000

export function embeddedKeyResolver(db: Db, initial: Map<string, string>): KeyResolver {
  let keys = initial
  let lastLoad = Date.now()
  return async ({ kid }) => {
    if (!kid) throw unknownKey()
    let key = keys.get(kid)
    if (!key && Date.now() - lastLoad > RELOAD_INTERVAL_MS) {
      lastLoad = Date.now()
      keys = await loadVerificationKeys(db)
      key = keys.get(kid)
    }
    if (!key) throw unknownKey()
    return key
  }
}

// A key the provider stops publishing stops verifying at the next read, at most this much later.
const JWKS_REFRESH_MS = 5 * 60_000
// Reads of the key set, asked for by tokens naming unknown keys or by the refresh, per minute at most.
const JWKS_READS_PER_MINUTE = 6

/**
 * Keys of an external OpenID provider, from its JWKS (`jwksUri`, from the configured issuer's
 * discovery document, never from a token). See jwksCache for what happens when it changes or
 * cannot be read.
 */
export function jwksKeyResolver(
  jwksUri: string,
  options: { maxStaleMs: number; onReadFailure: (ageMs: number) => void },
): KeyResolver {
  return jwksCache({
    fetchKeys: () => providerKeys(jwksUri),
    refreshMs: JWKS_REFRESH_MS,
    maxStaleMs: options.maxStaleMs,
    readsPerMinute: JWKS_READS_PER_MINUTE,
    timeoutMs: PROVIDER_TIMEOUT_MS,
    onReadFailure: options.onReadFailure,
  })
}
