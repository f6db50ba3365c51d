import { createPublicKey } from 'node:crypto'
import { Value } from '@sinclair/typebox/value'
import type { StoredJwks } from '../../../db/tables/clients.js'
import { type AssertionAlgorithm, Jwks } from '../../../schemas/clients.js'
import { invalidField } from '../../errors.js'

// Members that only a private or symmetric key has (RFC 7518 §6.2.2, §6.3.2, §6.4): a key set that
// carries one has leaked its owner's signing key, and is never stored or used.
const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'] as const

// RFC 7518 §3.3 requires 2048 bits for RS*; smaller RSA keys are forgeable in practice.
const MIN_RSA_BITS = 2048

type Algorithm = (typeof AssertionAlgorithm)['static']

const privateMemberOf = (key: Record<string, unknown>) => PRIVATE_MEMBERS.find((member) => member in key)

/**
 * The algorithm a public key verifies client assertions with (RS384 for RSA of 2048 bits or more,
 * ES384 for EC P-384), or why it cannot: a reason to show the client's administrator.
 */
function algorithmOf(key: Record<string, unknown>): Algorithm | string {
  let details: ReturnType<typeof createPublicKey>['asymmetricKeyDetails']
  let type: string | undefined
  try {
    const publicKey = createPublicKey({ key: key as never, format: 'jwk' })
    details = publicKey.asymmetricKeyDetails
    type = publicKey.asymmetricKeyType
  } catch {
    return 'is not a valid public key'
  }
  let algorithm: Algorithm
  if (type === 'rsa') {
    if ((details?.modulusLength ?? 0) < MIN_RSA_BITS) return `must have at least ${MIN_RSA_BITS} bits`
    algorithm = 'RS384'
  } else if (type === 'ec' && details?.namedCurve === 'secp384r1') {
    algorithm = 'ES384'
  } else {
    return 'must be an RSA key or an EC key on P-384'
  }
  if (key.alg !== undefined && key.alg !== algorithm) return `is not a key for ${String(key.alg)}`
  if (key.use !== undefined && key.use !== 'sig') return 'must be a signature key (use "sig")'
  if (Array.isArray(key.key_ops) && !key.key_ops.includes('verify')) return 'must allow "verify" (key_ops)'
  return algorithm
}

const isAlgorithm = (value: string): value is Algorithm => value === 'RS384' || value === 'ES384'

/**
 * A key set to register: public keys only, each usable for RS384 or ES384, no kid twice. The API's
 * body schema has checked the shape already; the command line's input has not.
 */
export function checkJwks(jwks: unknown): Jwks {
  const keys = (jwks as { keys?: unknown } | null)?.keys
  if (Array.isArray(keys)) {
    keys.forEach((key, index) => {
      const member = key && typeof key === 'object' ? privateMemberOf(key) : undefined
      if (member) {
        throw invalidField(
          `jwks.keys.${index}`,
          `holds private key material (${member}): register public keys only`,
        )
      }
    })
  }
  if (!Value.Check(Jwks, jwks)) {
    const error = [...Value.Errors(Jwks, jwks)][0]
    throw invalidField(`jwks${error?.path.replaceAll('/', '.') ?? ''}`, error?.message ?? 'is invalid')
  }
  const kids = new Set<string>()
  jwks.keys.forEach((key, index) => {
    const algorithm = algorithmOf(key)
    if (!isAlgorithm(algorithm)) throw invalidField(`jwks.keys.${index}`, algorithm)
    if (key.kid !== undefined) {
      if (kids.has(key.kid)) throw invalidField(`jwks.keys.${index}.kid`, `${key.kid} appears twice`)
      kids.add(key.kid)
    }
  })
  return jwks
}

/** The registered keys as the API shows them: id and algorithm, nothing of the key itself. */
export function keySummary(jwks: StoredJwks | null): { kid: string | null; alg: Algorithm }[] {
  return (jwks?.keys ?? []).flatMap((key) => {
    const algorithm = algorithmOf(key)
    return isAlgorithm(algorithm)
      ? [{ kid: typeof key.kid === 'string' ? key.kid : null, alg: algorithm }]
      : []
  })
}

/** Why a key set fetched from a client's JWKS URL cannot be used. */
class UnusableKeySet extends Error {}

const MAX_FETCHED_KEYS = 50

/**
 * The keys of a fetched key set that can verify assertions. A set may carry keys for other uses
 * (encryption, other algorithms), which are left out; one that carries private key material is
 * refused whole, since its owner has published their secret.
 */
export function usableKeys(jwks: unknown): StoredJwks {
  const keys = (jwks as { keys?: unknown } | null)?.keys
  if (!Array.isArray(keys) || keys.length > MAX_FETCHED_KEYS) throw new UnusableKeySet('not a JWKS')
  const objects = keys.filter(
    (key): key is Record<string, unknown> => typeof key === 'object' && key !== null && !Array.isArray(key),
  )
  if (objects.some(privateMemberOf)) throw new UnusableKeySet('private key material')
  return { keys: objects.filter((key) => isAlgorithm(algorithmOf(key))) }
}
