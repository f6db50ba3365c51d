import type { Db } from '../../db/database.js'

export function findLoginCandidate(db: Db, email: string) {
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
      'users.password_change_required',
      'organizations.group_path',
    ])
    .where((eb) => eb(eb.fn('lower', ['users.email']), '=', email.toLowerCase()))
    .where('users.kind', '=', 'PERSON')
    .where('users.active', '=', true)
    .executeTakeFirst()
}

export function findAccountBySubject(db: Db, subject: string) {
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
      'users.roles',
      'organizations.group_path',
    ])
    .where('users.subject', '=', subject)
    .executeTakeFirst()
}

/** What an access token says about an active account. */
export async function findTokenSubject(db: Db, userId: number) {
  const row = await db
    .selectFrom('users')
    .innerJoin('organizations', 'organizations.id', 'users.organization_id')
    .select([
      'users.subject',
      'users.email',
      'users.first_name',
      'users.last_name',
      'users.roles',
      'organizations.group_path',
    ])
    .where('users.id', '=', userId)
    .where('users.active', '=', true)
    .executeTakeFirst()
  return (
    row && {
      subject: row.subject,
      email: row.email,
      firstName: row.first_name,
      lastName: row.last_name,
      roles: row.roles,
      groupPath: row.group_path,
    }
  )
}
