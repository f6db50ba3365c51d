import { createPublicKey, generateKeyPair, randomBytes } from 'node:crypto'
import { promisify } from 'node:util'
import { type Kysely, sql } from 'kysely'
import type { Database, Db } from '../../db/database.js'
import { ACCESS_TOKEN_TTL_SECONDS } from './token-lifetimes.js'

const generateRsaKeyPair = promisify(generateKeyPair)

export interface SigningKey {
  kid: string
  privateKey: string
  publicKey: string
}

/** How often every instance looks for a newer signing key (after a rotation elsewhere). */
export const SIGNING_KEY_REFRESH_MS = 60_000

function newestKey(db: Db) {
  return db
    .selectFrom('signing_keys')
    .select(['kid', 'private_key', 'public_key'])
    .where('retired_at', 'is', null)
    .orderBy('created_at', 'desc')
    .orderBy('kid')
    .limit(1)
    .executeTakeFirst()
}

async function insertNewKey(db: Db): Promise<string> {
  const { privateKey, publicKey } = await generateRsaKeyPair('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  })
  const kid = randomBytes(12).toString('base64url')
  await db
    .insertInto('signing_keys')
    .values({ kid, algorithm: 'RS256', private_key: privateKey, public_key: publicKey, retired_at: null })
    .execute()
  return kid
}

/**
 * The key the embedded issuer signs with: the newest active one, generated on first start and kept
 * in the database so that every instance and every restart signs and verifies with the same keys.
 */
export async function ensureSigningKey(db: Kysely<Database>): Promise<SigningKey> {
  let row = await newestKey(db)
  if (!row) {
    await insertNewKey(db)
    row = await newestKey(db)
  }
  if (!row) throw new Error('No signing key could be created')
  return { kid: row.kid, privateKey: row.private_key, publicKey: row.public_key }
}

/**
 * Adds a new signing key and retires the others. Retired keys stay in the key set (and keep
 * verifying) until every token they may have signed has expired.
 */
export async function rotateSigningKey(db: Kysely<Database>): Promise<string> {
  return db.transaction().execute(async (trx) => {
    await trx
      .updateTable('signing_keys')
      .set({ retired_at: sql`now()` })
      .where('retired_at', 'is', null)
      .execute()
    return insertNewKey(trx)
  })
}

// Instances may keep signing with a retired key until their next refresh, so retired keys verify
// for a token lifetime plus that interval and a margin.
const RETIRED_KEY_GRACE_MS = ACCESS_TOKEN_TTL_SECONDS * 1000 + SIGNING_KEY_REFRESH_MS + 5 * 60_000

/** Public keys (PEM by kid) that may still verify tokens. */
export async function loadVerificationKeys(db: Kysely<Database>): Promise<Map<string, string>> {
  const cutoff = new Date(Date.now() - RETIRED_KEY_GRACE_MS)
  const rows = await db
    .selectFrom('signing_keys')
    .select(['kid', 'public_key'])
    .where((eb) => eb.or([eb('retired_at', 'is', null), eb('retired_at', '>', cutoff)]))
    .orderBy('created_at', 'desc')
    .execute()
  return new Map(rows.map((row) => [row.kid, row.public_key]))
}

/** A public key as a JSON Web Key for the key set endpoint. */
export function toJwk(kid: string, publicKeyPem: string) {
  const { n, e } = createPublicKey(publicKeyPem).export({ format: 'jwk' })
  return { kid, kty: 'RSA', alg: 'RS256', use: 'sig', n: n as string, e: e as string }
}
