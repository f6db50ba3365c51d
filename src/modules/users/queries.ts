import type { Insertable } from 'kysely'
import type { Db } from '../../../db/database.js'
import type { UsersTable } from '../../../db/tables/users.js'

/** A new tenant: the one insert that creates an organization rather than working inside one. */
export function insertOrganization(db: Db, organization: { name: string; groupPath: string }) {
  return db
    .insertInto('organizations')
    .values({ name: organization.name, group_path: organization.groupPath })
    .returningAll()
    .executeTakeFirstOrThrow()
}

export function insertUser(db: Db, user: Insertable<UsersTable>) {
  return db.insertInto('users').values(user).returningAll().executeTakeFirstOrThrow()
}
