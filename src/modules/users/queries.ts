import { type Insertable, sql } from 'kysely'
import type { Db, Trx } from '../../../db/database.js'
import type { UserRow, UsersTable } from '../../../db/tables/users.js'
import type { USER_SORT_FIELDS, UserListQuery } from '../../../schemas/users.js'
import { inOrganization } from '../../lib/organization-records.js'
import type { ListFilters, SortColumns } from '../../lib/paging.js'
import { rowList } from '../../lib/row-list.js'
import { changesRecord } from '../../lib/versions.js'

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

/** What the users API reads of an account: never the password hash, only whether there is one. */
export type AccountRow = Omit<UserRow, 'password_hash' | 'subject' | 'kind' | 'patient_id'> & {
  has_password: boolean
}

export const USER_SORT_COLUMNS: SortColumns<typeof USER_SORT_FIELDS> = {
  lastName: 'lower(last_name)',
  firstName: 'lower(first_name)',
  email: 'lower(email)',
  createdAt: 'created_at',
  updatedAt: 'updated_at',
}

const ACCOUNT_COLUMNS = [
  'id',
  'organization_id',
  'email',
  'first_name',
  'last_name',
  'roles',
  'active',
  'password_change_required',
  'created_at',
  'updated_at',
] as const

const HAS_PASSWORD = sql<boolean>`password_hash is not null`.as('has_password')

/**
 * The organization's accounts of people. Service accounts (the users behind confidential clients)
 * are managed through their client, so this area never shows or changes them.
 */
const people = (db: Db, organizationId: number) =>
  inOrganization(db, organizationId)
    .selectFrom('users')
    .select(ACCOUNT_COLUMNS)
    .select(HAS_PASSWORD)
    .where('kind', '=', 'PERSON')

export function findAccount(db: Db, organizationId: number, id: number): Promise<AccountRow | undefined> {
  return people(db, organizationId).where('id', '=', id).executeTakeFirst()
}

/** The account, its row locked until the transaction ends. */
export function lockAccount(trx: Trx, organizationId: number, id: number): Promise<AccountRow | undefined> {
  return people(trx, organizationId).where('id', '=', id).forUpdate().executeTakeFirst()
}

/**
 * The organization of a person's account, whatever the caller's: only to tell "not yours" (403)
 * from "does not exist" (404). Returns nothing of the account.
 */
export async function accountOwnerOrganization(db: Db, id: number): Promise<number | undefined> {
  const row = await db
    .selectFrom('users')
    .select('organization_id')
    .where('id', '=', id)
    .where('kind', '=', 'PERSON')
    .executeTakeFirst()
  return row?.organization_id
}

/** Whether any account, in any organization, signs in with this address: addresses are unique service-wide. */
export async function emailTaken(db: Db, email: string): Promise<boolean> {
  const row = await db
    .selectFrom('users')
    .select('id')
    .where((eb) => eb(eb.fn('lower', ['email']), '=', email.toLowerCase()))
    .executeTakeFirst()
  return row !== undefined
}

/**
 * Locks the organization row against other changes of who administers it (FOR NO KEY UPDATE, which
 * leaves inserts that merely reference the organization alone): two administrators demoting or
 * deactivating each other at once queue here, so the last-administrator check cannot be raced.
 */
export async function lockAdministration(trx: Trx, organizationId: number): Promise<void> {
  await trx
    .selectFrom('organizations')
    .select('id')
    .where('id', '=', organizationId)
    .forNoKeyUpdate()
    .executeTakeFirst()
}

/** Active people of the organization holding ADMIN, other than `exceptId`. */
export async function countOtherActiveAdmins(trx: Trx, organizationId: number, exceptId: number) {
  const row = await inOrganization(trx, organizationId)
    .selectFrom('users')
    .select(sql<number>`count(*)::int`.as('count'))
    .where('kind', '=', 'PERSON')
    .where('active', '=', true)
    .where('id', '<>', exceptId)
    .where(sql<boolean>`'ADMIN' = any(roles)`)
    .executeTakeFirstOrThrow()
  return Number(row.count)
}

/** Changes the account if that changes something (changesRecord) and returns it; undefined if nothing changed. */
export function updateAccount(
  trx: Trx,
  organizationId: number,
  id: number,
  changes: { first_name?: string; last_name?: string; roles?: string[]; active?: boolean },
): Promise<AccountRow | undefined> {
  return inOrganization(trx, organizationId)
    .updateTable('users')
    .set({ ...changes, updated_at: sql<Date>`now()` })
    .where('kind', '=', 'PERSON')
    .where('id', '=', id)
    .where(changesRecord(changes))
    .returning(ACCOUNT_COLUMNS)
    .returning(HAS_PASSWORD)
    .executeTakeFirst()
}

const escapeLike = (text: string) => text.replace(/[\\%_]/g, (c) => `\\${c}`)

/** The organization's accounts of people matching the filters. */
export function accountRows(db: Db, organizationId: number, filters: ListFilters<UserListQuery>) {
  let query = people(db, organizationId)
  if (filters.active !== undefined) query = query.where('active', '=', filters.active)
  if (filters.role) query = query.where(sql<boolean>`${filters.role} = any(roles)`)
  if (filters.q) {
    const pattern = `%${escapeLike(filters.q.toLowerCase())}%`
    query = query.where((eb) =>
      eb.or([
        eb(eb.fn('lower', ['email']), 'like', pattern),
        eb(sql`lower(first_name || ' ' || last_name)`, 'like', pattern),
      ]),
    )
  }
  return rowList(db, query)
}

/** The account of a patient of the organization, if it has one (a patient has one at most). */
export function findPatientAccount(db: Db, organizationId: number, patientId: number) {
  return inOrganization(db, organizationId)
    .selectFrom('users')
    .select(['id', 'email', 'active', 'created_at'])
    .where('kind', '=', 'PERSON')
    .where('patient_id', '=', patientId)
    .executeTakeFirst()
}
