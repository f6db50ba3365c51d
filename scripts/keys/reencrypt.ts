import type { Db } from '../../db/database.js'
import { resealPrivateKey, sealPlaintextKeys } from '../../src/identity/signing-keys.js'
import type { SecretBox } from '../../src/lib/secret-box.js'
import { resealSigningKey } from '../../src/outbox/webhook-secrets.js'
import { CommandError } from '../cli/run.js'

/** Rows read per query; each row is then re-encrypted in its own short transaction. */
const BATCH_SIZE = 100

export interface ReencryptCounts {
  /** Rows whose sealed values were moved to the current key. */
  reencrypted: number
  /** Rows already under the current key (an earlier, interrupted run, or written since). */
  current: number
}

function unreadable(what: string, error: unknown): CommandError {
  return new CommandError(
    `${what} opens with neither --from-key nor ENCRYPTION_KEY: check --from-key (nothing after this row was changed)`,
    { cause: error },
  )
}

/**
 * Moves every sealed value (signing private keys; webhook secrets, current and previous) to the
 * box's current key. `box` holds the new key first and the old one as previous. Each row is locked
 * and rewritten in its own transaction, so running instances (which read with either key during the
 * change) wait for a row at most one short transaction; a row already under the new key is skipped,
 * so the command can be run again after an interruption.
 */
export async function reencryptSecrets(db: Db, box: SecretBox): Promise<ReencryptCounts> {
  const counts: ReencryptCounts = { reencrypted: 0, current: 0 }
  // Keys still in clear (an instance older than migration 0021) are sealed under the new key too.
  counts.reencrypted += await sealPlaintextKeys(db, box)

  for (let after = ''; ; ) {
    const kids = await db
      .selectFrom('signing_keys')
      .select('kid')
      .where('kid', '>', after)
      .where('private_key_sealed', 'is not', null)
      .orderBy('kid')
      .limit(BATCH_SIZE)
      .execute()
    for (const { kid } of kids) {
      const changed = await db.transaction().execute(async (trx) => {
        const row = await trx
          .selectFrom('signing_keys')
          .select('private_key_sealed')
          .where('kid', '=', kid)
          .forUpdate()
          .executeTakeFirst()
        if (!row?.private_key_sealed) return false
        let resealed: string | undefined
        try {
          resealed = resealPrivateKey(box, kid, row.private_key_sealed)
        } catch (error) {
          throw unreadable(`Signing key ${kid}`, error)
        }
        if (resealed === undefined) return false
        await trx
          .updateTable('signing_keys')
          .set({ private_key_sealed: resealed })
          .where('kid', '=', kid)
          .execute()
        return true
      })
      counts[changed ? 'reencrypted' : 'current'] += 1
    }
    const last = kids.at(-1)
    if (!last) break
    after = last.kid
  }

  for (let after = 0; ; ) {
    const ids = await db
      .selectFrom('webhooks')
      .select('id')
      .where('id', '>', after)
      .orderBy('id')
      .limit(BATCH_SIZE)
      .execute()
    for (const { id } of ids) {
      const changed = await db.transaction().execute(async (trx) => {
        const row = await trx
          .selectFrom('webhooks')
          .select(['organization_id', 'secret', 'previous_secret'])
          .where('id', '=', id)
          .forUpdate()
          .executeTakeFirst()
        if (!row) return false
        let secret: string | undefined
        let previous: string | undefined
        try {
          secret = resealSigningKey(box, row.organization_id, row.secret)
          previous = row.previous_secret
            ? resealSigningKey(box, row.organization_id, row.previous_secret)
            : undefined
        } catch (error) {
          throw unreadable(`The secret of webhook ${id}`, error)
        }
        if (secret === undefined && previous === undefined) return false
        await trx
          .updateTable('webhooks')
          .set({
            ...(secret === undefined ? {} : { secret }),
            ...(previous === undefined ? {} : { previous_secret: previous }),
          })
          .where('id', '=', id)
          .execute()
        return true
      })
      counts[changed ? 'reencrypted' : 'current'] += 1
    }
    const last = ids.at(-1)
    if (!last) break
    after = last.id
  }
  return counts
}
