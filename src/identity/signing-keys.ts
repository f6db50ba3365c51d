import { createPublicKey, generateKeyPair, randomBytes } from 'node:crypto'
import { promisify } from 'node:util'
import { sql } from 'kysely'
import type { Db } from '../../db/database.js'
import type { SecretBox } from '../lib/secret-box.js'
import { ACCESS_TOKEN_TTL_SECONDS } from './token-lifetimes.js'

const generateRsaKeyPair = promisify(generateKeyPair)

export interface SigningKey {
  kid: string
  privateKey: string
  publicKey: string
}

/** How often every instance looks for a newer signing key (after a rotation elsewhere). */
export const SIGNING_KEY_REFRESH_MS = 60_000

// Bound to the key's id: a sealed key copied into another row does not open there.
const context = (kid: string) => `signing-key:${kid}`

function newestKey(db: Db) {
  return db
    .selectFrom('signing_keys')
    .select(['kid', 'private_key_sealed', 'public_key'])
    .where('retired_at', 'is', null)
    .orderBy('created_at', 'desc')
    .orderBy('kid')
    .limit(1)
    .executeTakeFirst()
}

async function insertNewKey(db: Db, box: SecretBox): Promise<string> {
  const { privateKey, publicKey } = await generateRsaKeyPair('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  })
  const kid = randomBytes(12).toString('base64url')
  await db
    .insertInto('signing_keys')
    .values({
      kid,
      algorithm: 'RS256',
      private_key: null,
      private_key_sealed: box.seal(Buffer.from(privateKey), context(kid)),
      public_key: publicKey,
      retired_at: null,
    })
    .execute()
  return kid
}

/**
 * Seals every private key still stored in clear (by a version before migration 0021, or by an older
 * instance during the upgrade) and clears the plaintext. The one place for that rule: it runs at
 * every start and every key refresh (ensureSigningKey) and before a re-encryption. The rows are
 * locked in one transaction, so instances starting together take turns and the later ones find
 * nothing left to seal.
 */
export async function sealPlaintextKeys(db: Db, box: SecretBox): Promise<number> {
  const pending = await db
    .selectFrom('signing_keys')
    .select('kid')
    .where('private_key', 'is not', null)
    .executeTakeFirst()
  if (!pending) return 0
  return db.transaction().execute(async (trx) => {
    const rows = await trx
      .selectFrom('signing_keys')
      .select(['kid', 'private_key'])
      .where('private_key', 'is not', null)
      .orderBy('kid')
      .forUpdate()
      .execute()
    for (const { kid, private_key } of rows) {
      await trx
        .updateTable('signing_keys')
        .set({
          private_key: null,
          private_key_sealed: box.seal(Buffer.from(private_key as string), context(kid)),
        })
        .where('kid', '=', kid)
        .execute()
    }
    return rows.length
  })
}

/** The PKCS#8 PEM private key of a sealed row. */
export const openPrivateKey = (box: SecretBox, kid: string, sealed: string) =>
  box.open(sealed, context(kid)).toString('utf8')

/** A sealed private key under the box's current key; undefined when it already is. */
export const resealPrivateKey = (box: SecretBox, kid: string, sealed: string) =>
  box.reseal(sealed, context(kid))

/**
 * The key the embedded issuer signs with: the newest active one, generated on first start and kept
 * in the database (sealed with the encryption key) so that every instance and every restart signs
 * and verifies with the same keys.
 */
export async function ensureSigningKey(db: Db, box: SecretBox): Promise<SigningKey> {
  await sealPlaintextKeys(db, box)
  let row = await newestKey(db)
  if (!row) {
    await insertNewKey(db, box)
    row = await newestKey(db)
  }
  if (!row?.private_key_sealed) throw new Error('No signing key could be created')
  const privateKey = openPrivateKey(box, row.kid, row.private_key_sealed)
  return { kid: row.kid, privateKey, publicKey: row.public_key }
}

/**
 * Adds a new signing key and retires the others. Retired keys stay in the key set (and keep
 * verifying) until every token they may have signed has expired.
 */
export async function rotateSigningKey(db: Db, box: SecretBox): Promise<string> {
  return db.transaction().execute(async (trx) => {
    await trx
      .updateTable('signing_keys')
      .set({ retired_at: sql`now()` })
      .where('retired_at', 'is', null)
      .execute()
    return insertNewKey(trx, box)
  })
}

// Instances may keep signing with a retired key until their next refresh, so retired keys verify
// for a token lifetime plus that interval and a margin.
const RETIRED_KEY_GRACE_MS = ACCESS_TOKEN_TTL_SECONDS * 1000 + SIGNING_KEY_REFRESH_MS + 5 * 60_000

/** Public keys (PEM by kid) that may still verify tokens. */
export async function loadVerificationKeys(db: Db): Promise<Map<string, string>> {
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
