import { type Insertable, sql } from 'kysely'
import type { Db, Trx } from '../../../db/database.js'
import type { ClientsTable, StoredJwks } from '../../../db/tables/clients.js'
import type { UsersTable } from '../../../db/tables/users.js'
import type { CLIENT_SORT_FIELDS } from '../../../schemas/clients.js'
import type { PageQuery } from '../../../schemas/common.js'
import { inOrganization } from '../../lib/organization-records.js'
import { fetchPage, type SortColumns, type SortOrder } from '../../lib/paging.js'
import { changesRecord, touch } from '../../lib/versions.js'

/** The service-account user a confidential client acts as; returns its id. */
export async function insertServiceAccount(trx: Trx, user: Insertable<UsersTable>): Promise<number> {
  const row = await trx.insertInto('users').values(user).returning('id').executeTakeFirstOrThrow()
  return row.id
}

export async function insertClient(trx: Trx, client: Insertable<ClientsTable>): Promise<number> {
  const row = await trx.insertInto('clients').values(client).returning('id').executeTakeFirstOrThrow()
  return row.id
}

/**
 * A client's secret hashes and service account, by client id across organizations by design: the
 * client proves who it is (and so which organization it acts for) with this. The previous secret's
 * hash comes only while its overlap lasts, by the database's clock.
 */
export function findClientCredentials(db: Db, clientId: string) {
  return db
    .selectFrom('clients')
    .innerJoin('users', 'users.id', 'clients.user_id')
    .select([
      sql<string | null>`case when clients.secret_enabled then clients.secret_hash end`.as('secret_hash'),
      'clients.user_id',
      'users.active',
      sql<string | null>`case when clients.secret_enabled and clients.previous_secret_expires_at > now()
        then clients.previous_secret_hash end`.as('previous_secret_hash'),
    ])
    .where('clients.client_id', '=', clientId)
    .executeTakeFirst()
}

/**
 * What verifies a client's assertions: its keys (stored or by URL) and service account, by client
 * id across organizations by design, as for secrets.
 */
export function findClientKeys(db: Db, clientId: string) {
  return db
    .selectFrom('clients')
    .innerJoin('users', 'users.id', 'clients.user_id')
    .select(['clients.user_id', 'clients.jwks', 'clients.jwks_url', 'users.active'])
    .where('clients.client_id', '=', clientId)
    .executeTakeFirst()
}

// Expired jtis removed with each new one: enough to keep pace with any rate of new assertions,
// small enough that no token request does much cleaning.
const JTI_PURGE_BATCH = 100

/**
 * Records an assertion's jti for the client id it names (a client's or a SMART app's) until
 * `expiresAt`; false when that client used it before and that use has not expired (a replay).
 * Concurrent uses of one jti: the primary key lets only one through.
 */
export async function recordAssertionJti(
  db: Db,
  clientId: string,
  jti: string,
  expiresAt: Date,
): Promise<boolean> {
  await db
    .deleteFrom('assertion_jtis')
    .where((eb) =>
      eb(
        eb.refTuple('client_id', 'jti'),
        'in',
        eb
          .selectFrom('assertion_jtis')
          .select(['client_id', 'jti'])
          .where('expires_at', '<', sql<Date>`now()`)
          .limit(JTI_PURGE_BATCH)
          .$asTuple('client_id', 'jti'),
      ),
    )
    .execute()
  const recorded = await db
    .insertInto('assertion_jtis')
    .values({ client_id: clientId, jti, expires_at: expiresAt })
    .onConflict((conflict) =>
      conflict
        .columns(['client_id', 'jti'])
        .doUpdateSet({ expires_at: expiresAt })
        .where('assertion_jtis.expires_at', '<', sql<Date>`now()`),
    )
    .returning('jti')
    .executeTakeFirst()
  return recorded !== undefined
}

/** Whether the client id is taken: client ids are unique across organizations. */
export async function clientIdTaken(db: Db, clientId: string): Promise<boolean> {
  const row = await db.selectFrom('clients').select('id').where('client_id', '=', clientId).executeTakeFirst()
  return row !== undefined
}

export const CLIENT_SORT_COLUMNS: SortColumns<typeof CLIENT_SORT_FIELDS> = {
  name: 'lower(users.first_name)',
  clientId: 'clients.client_id',
  createdAt: 'clients.created_at',
  updatedAt: 'clients.updated_at',
}

/** What the clients API reads of a client: never a secret hash (only whether there is one). */
export interface ClientRecord {
  id: number
  client_id: string
  user_id: number
  name: string
  roles: string[]
  active: boolean
  previous_secret_expires_at: Date | null
  has_secret: boolean
  jwks: StoredJwks | null
  jwks_url: string | null
  created_at: Date
  updated_at: Date
}

/** The organization's confidential clients, each with its service account (name, roles, active). */
const scoped = (db: Db, organizationId: number) =>
  db
    .selectFrom('clients')
    .innerJoin('users', 'users.id', 'clients.user_id')
    .select([
      'clients.id',
      'clients.client_id',
      'clients.user_id',
      'users.first_name as name',
      'users.roles',
      'users.active',
      'clients.previous_secret_expires_at',
      'clients.secret_enabled as has_secret',
      'clients.jwks',
      'clients.jwks_url',
      'clients.created_at',
      'clients.updated_at',
    ])
    .where('users.organization_id', '=', organizationId)
    .where('users.kind', '=', 'SERVICE')

export function findClient(db: Db, organizationId: number, id: number): Promise<ClientRecord | undefined> {
  return scoped(db, organizationId).where('clients.id', '=', id).executeTakeFirst()
}

/** The client and its service account, both rows locked until the transaction ends. */
export function lockClient(trx: Trx, organizationId: number, id: number): Promise<ClientRecord | undefined> {
  return scoped(trx, organizationId).where('clients.id', '=', id).forUpdate().executeTakeFirst()
}

/**
 * The organization of a client, whatever the caller's: only to tell "not yours" (403) from "does
 * not exist" (404). Returns nothing of the client.
 */
export async function clientOwnerOrganization(db: Db, id: number): Promise<number | undefined> {
  const row = await db
    .selectFrom('clients')
    .innerJoin('users', 'users.id', 'clients.user_id')
    .select('users.organization_id')
    .where('clients.id', '=', id)
    .executeTakeFirst()
  return row?.organization_id
}

/**
 * The current secret's hash of a client the caller has locked in its organization (for a rotation);
 * null while the client authenticates with its keys only.
 */
export async function secretHashOf(trx: Trx, id: number): Promise<string | null> {
  const row = await trx
    .selectFrom('clients')
    .select(['secret_hash', 'secret_enabled'])
    .where('id', '=', id)
    .executeTakeFirstOrThrow()
  return row.secret_enabled ? row.secret_hash : null
}

/**
 * Changes what the client's service account holds: its name (first name), roles, active flag. If
 * that changes something (changesRecord), the client is touched as changed; otherwise it is as it was.
 */
export async function updateServiceAccount(
  trx: Trx,
  organizationId: number,
  client: ClientRecord,
  changes: { first_name?: string; roles?: string[]; active?: boolean },
): Promise<ClientRecord> {
  const changed = await inOrganization(trx, organizationId)
    .updateTable('users')
    .set({ ...changes, updated_at: sql<Date>`now()` })
    .where('kind', '=', 'SERVICE')
    .where('id', '=', client.user_id)
    .where(changesRecord(changes))
    .returning('id')
    .executeTakeFirst()
  return changed ? touchClient(trx, organizationId, client.id, touch()) : client
}

/**
 * Changes the client row (its secrets and keys) and its change time, if that changes something
 * (changesRecord: a touch() always does).
 */
export async function touchClient(
  trx: Trx,
  organizationId: number,
  id: number,
  changes: {
    secret_hash?: string
    secret_enabled?: boolean
    jwks?: string | null
    jwks_url?: string | null
    previous_secret_hash?: string | null
    /** Seconds from the database's now, or null for none. */
    previous_secret_seconds?: number | null
    /** Set by touch(): a change whatever the other columns hold. */
    updated_at?: Date
  },
): Promise<ClientRecord> {
  const { previous_secret_seconds: seconds, ...columns } = changes
  const written = {
    ...columns,
    ...(seconds === undefined
      ? {}
      : {
          previous_secret_expires_at:
            seconds === null ? null : sql<Date>`now() + make_interval(secs => ${seconds})`,
        }),
  }
  await trx
    .updateTable('clients')
    .set({ ...written, updated_at: sql<Date>`now()` })
    .where('id', '=', id)
    .where(changesRecord(written))
    .execute()
  const row = await scoped(trx, organizationId).where('clients.id', '=', id).executeTakeFirst()
  if (!row) throw new Error(`client ${id} vanished inside its transaction`)
  return row
}

export interface ClientFilters {
  active?: boolean
}

export function listClients(
  db: Db,
  organizationId: number,
  filters: ClientFilters,
  sort: SortOrder,
  paging: PageQuery,
) {
  let query = scoped(db, organizationId)
  if (filters.active !== undefined) query = query.where('users.active', '=', filters.active)
  // The id tie-breaker is qualified here: the join has two ids. Raw SQL is safe, as in
  // orderByExpression: the column comes from CLIENT_SORT_COLUMNS, never from the request.
  const ordered = query
    .orderBy(sql.raw(`${sort.column} ${sort.direction}`))
    .orderBy('clients.id', sort.direction)
  return fetchPage(db, ordered, paging)
}
