import { generateKeyPair, randomBytes } from 'node:crypto'
import { promisify } from 'node:util'
import type { Kysely } from 'kysely'
import type { Database } from '../../../db/database.js'

const generateRsaKeyPair = promisify(generateKeyPair)

export interface SigningKey {
  kid: string
  privateKey: string
  publicKey: string
}

function newestKey(db: Kysely<Database>) {
  return db
    .selectFrom('signing_keys')
    .select(['kid', 'private_key', 'public_key'])
    .where('retired_at', 'is', null)
    .orderBy('created_at', 'desc')
    .orderBy('kid')
    .limit(1)
    .executeTakeFirst()
}

/**
 * The key the embedded issuer signs with: the newest active one, generated on first start and kept
 * in the database so that every instance and every restart signs and verifies with the same keys.
 */
export async function ensureSigningKey(db: Kysely<Database>): Promise<SigningKey> {
  let row = await newestKey(db)
  if (!row) {
    const { privateKey, publicKey } = await generateRsaKeyPair('rsa', {
      modulusLength: 2048,
      publicKeyEncoding: { type: 'spki', format: 'pem' },
      privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    })
    await db
      .insertInto('signing_keys')
      .values({
        kid: randomBytes(12).toString('base64url'),
        algorithm: 'RS256',
        private_key: privateKey,
        public_key: publicKey,
        retired_at: null,
      })
      .execute()
    row = await newestKey(db)
  }
  if (!row) throw new Error('No signing key could be created')
  return { kid: row.kid, privateKey: row.private_key, publicKey: row.public_key }
}

/** Public keys that may still verify tokens: active keys and keys retired within a token lifetime. */
export async function loadVerificationKeys(db: Kysely<Database>, tokenLifetimeSeconds: number) {
  const cutoff = new Date(Date.now() - tokenLifetimeSeconds * 1000)
  const rows = await db
    .selectFrom('signing_keys')
    .select(['kid', 'public_key'])
    .where((eb) => eb.or([eb('retired_at', 'is', null), eb('retired_at', '>', cutoff)]))
    .execute()
  return new Map(rows.map((row) => [row.kid, row.public_key]))
}
