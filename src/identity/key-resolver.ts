import type { Kysely } from 'kysely'
import type { Database } from '../../db/database.js'
import { AppError } from '../errors.js'
import { loadVerificationKeys } from './signing-keys.js'

export interface TokenHeader {
  kid?: string
  alg?: string
}

/** Finds the public key (PEM) that must have signed a token with this header. */
export type KeyResolver = (header: TokenHeader) => Promise<string>

const unknownKey = () => new AppError('AUTH_001', 'The token was signed by an unknown key')

// Another instance may have added a key; look again, but not more often than this.
const RELOAD_INTERVAL_MS = 10_000

export function embeddedKeyResolver(db: Kysely<Database>, initial: Map<string, string>): KeyResolver {
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

// get-jwks' own timeout does not bound the fetch; a hung identity provider must not hang requests.
const JWKS_TIMEOUT_MS = 5000

/**
 * Keys of an external OpenID provider, from its discovery document and JWKS (cached; an unknown
 * `kid` triggers a refetch). The domain is always the configured issuer, never a token's `iss`.
 * Keys already cached keep verifying while the provider is down (get-jwks also falls back to a
 * recently expired key when a refetch fails).
 */
export async function jwksKeyResolver(issuer: string): Promise<KeyResolver> {
  // Loaded here: only a service with an external identity provider needs it.
  const { default: buildGetJwks } = await import('get-jwks')
  const jwks = buildGetJwks({ providerDiscovery: true, ttl: 10 * 60_000, max: 50 })
  const domain = issuer.endsWith('/') ? issuer : `${issuer}/`
  return async ({ kid, alg }) => {
    let timer: NodeJS.Timeout | undefined
    const timedOut = new AppError('AUTH_001', 'The identity provider did not answer; try again shortly')
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(timedOut), JWKS_TIMEOUT_MS)
    })
    try {
      return await Promise.race([jwks.getPublicKey({ domain: issuer, kid, alg }), timeout])
    } catch (error) {
      if (error === timedOut) {
        // get-jwks caches the pending fetch, which a hung connection may hold for minutes; drop it
        // so that the next request asks afresh and succeeds as soon as the provider answers again.
        jwks.cache.delete(jwks.generateCacheKey(alg as string, kid as string, domain))
        throw error
      }
      if (error instanceof AppError) throw error
      const code = (error as { code?: string }).code
      if (code === 'JWK_NOT_FOUND' || code === 'NO_JWKS') throw unknownKey()
      throw new AppError('AUTH_001', 'The identity provider could not be reached to check the token’s key')
    } finally {
      clearTimeout(timer)
    }
  }
}
