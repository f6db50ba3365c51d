import { sql } from 'kysely'
import type { Db, Trx } from '../../../db/database.js'

export function insertPasswordResetToken(
  db: Db,
  token: { userId: number; tokenHash: string; expiresAt: Date },
) {
  return db
    .insertInto('password_reset_tokens')
    .values({
      user_id: token.userId,
      token_hash: token.tokenHash,
      expires_at: token.expiresAt,
      used_at: null,
    })
    .execute()
}

/** The active account an unused, unexpired reset token belongs to. */
export function findPasswordResetAccount(db: Db, tokenHash: string) {
  return db
    .selectFrom('password_reset_tokens')
    .innerJoin('users', 'users.id', 'password_reset_tokens.user_id')
    .select(['users.id', 'users.email'])
    .where('password_reset_tokens.token_hash', '=', tokenHash)
    .where('password_reset_tokens.used_at', 'is', null)
    .where('password_reset_tokens.expires_at', '>', sql<Date>`now()`)
    .where('users.kind', '=', 'PERSON')
    .where('users.active', '=', true)
    .executeTakeFirst()
}

/** Marks used the reset tokens not used yet that the caller's WHERE picks. */
const usingUp = (trx: Trx) =>
  trx.updateTable('password_reset_tokens').set({ used_at: sql`now()` }).where('used_at', 'is', null)

/**
 * Marks a reset token used if it still is usable, in one statement: of concurrent claims of the
 * same token exactly one gets its row back.
 */
export function claimPasswordResetToken(trx: Trx, tokenHash: string) {
  return usingUp(trx)
    .where('token_hash', '=', tokenHash)
    .where('expires_at', '>', sql<Date>`now()`)
    .returning('user_id')
    .executeTakeFirst()
}

/** Ends every reset link of a user still outstanding: they were sent for the password just replaced. */
export function retirePasswordResetTokens(trx: Trx, userId: number) {
  return usingUp(trx).where('user_id', '=', userId).execute()
}

/**
 * Stores a new password hash and clears the temporary-password flag. With `previousHash`, only
 * while the stored hash is still that one, so that two concurrent changes cannot both succeed.
 * Returns whether the row was updated.
 */
export async function updatePasswordHash(
  trx: Trx,
  userId: number,
  passwordHash: string,
  previousHash?: string,
): Promise<boolean> {
  let query = trx
    .updateTable('users')
    .set({ password_hash: passwordHash, password_change_required: false, updated_at: sql<Date>`now()` })
    .where('id', '=', userId)
  if (previousHash !== undefined) query = query.where('password_hash', '=', previousHash)
  const result = await query.executeTakeFirst()
  return result.numUpdatedRows > 0n
}
