import type { AccessTokenClaims } from '../../schemas/auth.js'

// How far ahead of this instance's clock a token's `iat` may be. Hosts kept by NTP agree within a
// second; a minute absorbs a drifting one without accepting tokens minted for later use.
const TOKEN_CLOCK_SKEW_SECONDS = 60

export interface TokenClaimRules {
  /** The longest lifetime (`exp` − `iat`) the issuer gives its access tokens. */
  maxLifetimeSeconds: number
  /** Every token must name its session (`sid`), or it could never be revoked. */
  requireSession: boolean
}

/**
 * Why a token whose signature, issuer and expiry check out is still refused, or undefined. A token
 * the issuer would never have issued (dated in the future, living longer than it lets tokens live,
 * or outside any session) is a forged or mis-issued one, whoever's key signed it.
 */
export function refusedClaims(
  claims: AccessTokenClaims,
  rules: TokenClaimRules,
  nowSeconds = Date.now() / 1000,
): string | undefined {
  const { iat, exp } = claims as { iat: unknown; exp: unknown }
  if (typeof iat !== 'number' || !Number.isFinite(iat) || typeof exp !== 'number') {
    return "The access token's iat and exp must be times in seconds"
  }
  if (iat > nowSeconds + TOKEN_CLOCK_SKEW_SECONDS) {
    return 'The access token was issued in the future (iat); the clocks of the issuer and this service disagree'
  }
  if (exp - iat > rules.maxLifetimeSeconds) {
    return `The access token's lifetime (exp − iat) exceeds the ${rules.maxLifetimeSeconds} s its issuer may give`
  }
  if (rules.requireSession && (typeof claims.sid !== 'string' || claims.sid === '')) {
    return 'The access token names no session (sid), so it could not be revoked'
  }
  return undefined
}
