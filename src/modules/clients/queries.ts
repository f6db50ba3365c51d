import type { Insertable } from 'kysely'
import type { Db, Trx } from '../../../db/database.js'
import type { ClientsTable } from '../../../db/tables/clients.js'
import type { UsersTable } from '../../../db/tables/users.js'

/** The service-account user a confidential client acts as; returns its id. */
export async function insertServiceAccount(trx: Trx, user: Insertable<UsersTable>): Promise<number> {
  const row = await trx.insertInto('users').values(user).returning('id').executeTakeFirstOrThrow()
  return row.id
}

export async function insertClient(trx: Trx, client: Insertable<ClientsTable>): Promise<void> {
  await trx.insertInto('clients').values(client).execute()
}

/**
 * A client's secret hash and service account, by client id across organizations by design: the
 * client proves who it is (and so which organization it acts for) with this.
 */
export function findClientCredentials(db: Db, clientId: string) {
  return db
    .selectFrom('clients')
    .innerJoin('users', 'users.id', 'clients.user_id')
    .select(['clients.secret_hash', 'clients.user_id', 'users.active'])
    .where('clients.client_id', '=', clientId)
    .executeTakeFirst()
}

/** Whether the client id is taken: client ids are unique across organizations. */
export async function clientIdTaken(db: Db, clientId: string): Promise<boolean> {
  const row = await db.selectFrom('clients').select('id').where('client_id', '=', clientId).executeTakeFirst()
  return row !== undefined
}
