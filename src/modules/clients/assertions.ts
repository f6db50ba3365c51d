import {
  type CryptoKey,
  createLocalJWKSet,
  decodeJwt,
  decodeProtectedHeader,
  errors,
  type JSONWebKeySet,
  type JWTPayload,
  type JWTVerifyOptions,
  jwtVerify,
} from 'jose'
import type { StoredJwks } from '../../../db/tables/clients.js'
import { ASSERTION_ALGORITHMS } from '../../../schemas/clients.js'

/** RFC 7523's client assertion type: the client authenticates with a JWT signed by its key. */
export const JWT_BEARER = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer'

// SMART Backend Services: an assertion expires no more than five minutes after it is made.
const MAX_LIFETIME_SECONDS = 300
// Clocks of client hosts drift; a minute either way is usual for JWT validation.
const CLOCK_SKEW_SECONDS = 60
const MAX_JTI_LENGTH = 255

const INVALID_CLIENT = 'Invalid client or client credentials'

/**
 * The assertion does not authenticate the client. The message is safe to return: before the
 * signature is verified it says nothing about why (nor whether the client exists); after, it names
 * the claim at fault, which only the key holder can learn.
 */
export class AssertionRefused extends Error {
  constructor(
    message = INVALID_CLIENT,
    /** The client's key set could not be fetched from its URL (for the operator's log). */
    readonly keysUnavailable = false,
  ) {
    super(message)
  }
}

/**
 * The client an assertion claims to come from (`iss`), read before anything is verified, to find its
 * keys. The algorithm is checked here too: RS384 and ES384 only (never `none` or an HMAC).
 */
export function claimedClient(assertion: string): string {
  let issuer: unknown
  let algorithm: unknown
  try {
    algorithm = decodeProtectedHeader(assertion).alg
    issuer = decodeJwt(assertion).iss
  } catch {
    throw new AssertionRefused()
  }
  if (!ASSERTION_ALGORITHMS.includes(algorithm as never)) throw new AssertionRefused()
  if (typeof issuer !== 'string' || issuer === '') throw new AssertionRefused()
  return issuer
}

/** The keys of a client: `refresh` asks again after an unknown kid (undefined: not now). */
export type KeySource = (refresh: boolean) => Promise<StoredJwks | undefined>

type JoseError = Error & { code?: string; claim?: string }

/**
 * Verifies with the key the header's kid names; without a kid, with each key of the algorithm in
 * turn (jose hands them over as an async iterable of the error it throws for several matches).
 */
async function verifyWith(assertion: string, jwks: StoredJwks, options: JWTVerifyOptions) {
  try {
    return await jwtVerify(assertion, createLocalJWKSet(jwks as JSONWebKeySet), options)
  } catch (error) {
    if ((error as JoseError).code !== 'ERR_JWKS_MULTIPLE_MATCHING_KEYS') throw error
    let last: unknown = error
    for await (const key of error as unknown as AsyncIterable<CryptoKey>) {
      try {
        return await jwtVerify(assertion, key, options)
      } catch (attempt) {
        last = attempt
        if ((attempt as JoseError).code !== 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED') break
      }
    }
    throw last
  }
}

function refusalOf(error: unknown): AssertionRefused {
  const { code, claim } = error as JoseError
  // jose checks claims only once the signature has verified.
  if (code === 'ERR_JWT_EXPIRED') return new AssertionRefused('The client assertion has expired')
  if (code === 'ERR_JWT_CLAIM_VALIDATION_FAILED') {
    if (claim === 'aud')
      return new AssertionRefused('The client assertion’s aud must be the token endpoint URL or the issuer')
    return new AssertionRefused(`The client assertion’s ${claim} claim is missing or wrong`)
  }
  return new AssertionRefused()
}

/**
 * Verifies a client assertion (RFC 7523 as SMART Backend Services profiles it): signed with one
 * of the client's keys in RS384 or ES384; `iss` and `sub` the client; `aud` one of `audiences`;
 * `exp` not past and at most five minutes ahead; a `jti`. Returns the jti and until when it must be
 * remembered. Replay is the caller's to check.
 */
export async function verifyAssertion(
  assertion: string,
  keys: KeySource,
  expected: { clientId: string; audiences: readonly string[] },
): Promise<{ jti: string; rememberUntil: Date }> {
  const options: JWTVerifyOptions = {
    algorithms: [...ASSERTION_ALGORITHMS],
    issuer: expected.clientId,
    subject: expected.clientId,
    audience: [...expected.audiences],
    requiredClaims: ['exp', 'jti'],
    clockTolerance: CLOCK_SKEW_SECONDS,
  }
  let payload: JWTPayload
  try {
    const jwks = await keys(false)
    if (!jwks) throw new AssertionRefused()
    try {
      payload = (await verifyWith(assertion, jwks, options)).payload
    } catch (error) {
      // A kid this set does not have: the client may have rotated its keys since they were fetched.
      if ((error as JoseError).code !== 'ERR_JWKS_NO_MATCHING_KEY') throw error
      const fresh = await keys(true)
      if (!fresh) throw error
      payload = (await verifyWith(assertion, fresh, options)).payload
    }
  } catch (error) {
    if (error instanceof errors.JOSEError) throw refusalOf(error)
    throw error
  }
  const { exp, jti } = payload as { exp: number; jti: unknown }
  if (exp > Date.now() / 1000 + MAX_LIFETIME_SECONDS + CLOCK_SKEW_SECONDS) {
    throw new AssertionRefused('The client assertion must expire within 5 minutes')
  }
  if (typeof jti !== 'string' || jti === '' || jti.length > MAX_JTI_LENGTH) {
    throw new AssertionRefused('The client assertion’s jti claim is missing or wrong')
  }
  return { jti, rememberUntil: new Date((exp + CLOCK_SKEW_SECONDS) * 1000) }
}
