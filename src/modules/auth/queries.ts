import type { Kysely } from 'kysely'
import type { Database } from '../../../db/database.js'

export function findLoginCandidate(db: Kysely<Database>, email: string) {
  return db
    .selectFrom('users')
    .innerJoin('organizations', 'organizations.id', 'users.organization_id')
    .select([
      'users.id',
      'users.subject',
      'users.email',
      'users.password_hash',
      'users.first_name',
      'users.last_name',
      'users.roles',
      'users.organization_id',
      'organizations.group_path',
    ])
    .where((eb) => eb(eb.fn('lower', ['users.email']), '=', email.toLowerCase()))
    .where('users.active', '=', true)
    .executeTakeFirst()
}

export function findAccountBySubject(db: Kysely<Database>, subject: string) {
  return db
    .selectFrom('users')
    .innerJoin('organizations', 'organizations.id', 'users.organization_id')
    .select([
      'users.id',
      'users.email',
      'users.first_name',
      'users.last_name',
      'users.active',
      'users.organization_id',
      'organizations.group_path',
    ])
    .where('users.subject', '=', subject)
    .executeTakeFirst()
}

export async function insertSession(
  db: Kysely<Database>,
  session: { id: string; userId: number; refreshTokenHash: string; expiresAt: Date },
): Promise<void> {
  await db
    .insertInto('sessions')
    .values({
      id: session.id,
      user_id: session.userId,
      refresh_token_hash: session.refreshTokenHash,
      expires_at: session.expiresAt,
      revoked_at: null,
    })
    .execute()
}
