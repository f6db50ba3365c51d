import { type Insertable, type Selectable, sql } from 'kysely'
import type { Db, Trx } from '../../../db/database.js'
import type { SmartAppsTable } from '../../../db/tables/smart-launch.js'
import type { PageQuery } from '../../../schemas/common.js'
import type { APP_GRANT_SORT_FIELDS, SMART_APP_SORT_FIELDS } from '../../../schemas/smart-apps.js'
import { fetchPage, type SortColumns, type SortOrder } from '../../lib/paging.js'

export type SmartAppRow = Selectable<SmartAppsTable>

// smart_apps, app_grants and launch_contexts are local tables (db/sharding-plan.ts): they are read
// by client id or hash before the organization is known, yet every read or write made for a caller
// names the caller's organization.

export async function insertApp(trx: Trx, app: Insertable<SmartAppsTable>): Promise<SmartAppRow> {
  return trx.insertInto('smart_apps').values(app).returningAll().executeTakeFirstOrThrow()
}

const apps = (db: Db, organizationId: number) =>
  db.selectFrom('smart_apps').selectAll().where('organization_id', '=', organizationId)

export function findApp(db: Db, organizationId: number, id: number): Promise<SmartAppRow | undefined> {
  return apps(db, organizationId).where('id', '=', id).executeTakeFirst()
}

export function lockApp(trx: Trx, organizationId: number, id: number): Promise<SmartAppRow | undefined> {
  return apps(trx, organizationId).where('id', '=', id).forUpdate().executeTakeFirst()
}

/** The organization of an app, whatever the caller's: only to tell 403 from 404. */
export async function appOwnerOrganization(db: Db, id: number): Promise<number | undefined> {
  const row = await db
    .selectFrom('smart_apps')
    .select('organization_id')
    .where('id', '=', id)
    .executeTakeFirst()
  return row?.organization_id
}

/** An app not deactivated, by client id across organizations by design: the app says who it is. */
export function findActiveAppByClientId(db: Db, clientId: string): Promise<SmartAppRow | undefined> {
  return db
    .selectFrom('smart_apps')
    .selectAll()
    .where('client_id', '=', clientId)
    .where('disabled_at', 'is', null)
    .executeTakeFirst()
}

/** The current keys of an app still active (a change since the app was read counts). */
export function currentKeys(
  db: Db,
  id: number,
): Promise<Pick<SmartAppRow, 'confidential' | 'jwks' | 'jwks_url'> | undefined> {
  return db
    .selectFrom('smart_apps')
    .select(['confidential', 'jwks', 'jwks_url'])
    .where('id', '=', id)
    .where('disabled_at', 'is', null)
    .executeTakeFirst()
}

/** The current secret hash of an app still active (a rotation since the app was read counts). */
export async function currentSecretHash(db: Db, id: number): Promise<string | null> {
  const row = await db
    .selectFrom('smart_apps')
    .select('secret_hash')
    .where('id', '=', id)
    .where('disabled_at', 'is', null)
    .executeTakeFirst()
  return row?.secret_hash ?? null
}

export async function updateApp(
  trx: Trx,
  organizationId: number,
  id: number,
  changes: Partial<{
    name: string
    redirect_uris: string[]
    scopes: string[]
    launch_url: string | null
    jwks: string | null
    jwks_url: string | null
    secret_hash: string | null
    disabled_at: Date | null
  }>,
): Promise<SmartAppRow> {
  return trx
    .updateTable('smart_apps')
    .set({ ...changes, updated_at: sql<Date>`now()` })
    .where('organization_id', '=', organizationId)
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow()
}

/** Deactivates the app as of the database's clock. */
export function disableApp(trx: Trx, organizationId: number, id: number): Promise<SmartAppRow> {
  return trx
    .updateTable('smart_apps')
    .set({ disabled_at: sql<Date>`now()`, updated_at: sql<Date>`now()` })
    .where('organization_id', '=', organizationId)
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow()
}

export const SMART_APP_SORT_COLUMNS: SortColumns<typeof SMART_APP_SORT_FIELDS> = {
  name: 'lower(name)',
  clientId: 'client_id',
  createdAt: 'created_at',
  updatedAt: 'updated_at',
}

export function listApps(
  db: Db,
  organizationId: number,
  filters: { active?: boolean },
  sort: SortOrder,
  paging: PageQuery,
) {
  let query = apps(db, organizationId)
  if (filters.active !== undefined) {
    query = query.where('disabled_at', filters.active ? 'is' : 'is not', null)
  }
  // Raw SQL is safe: the column comes from SMART_APP_SORT_COLUMNS, never from the request.
  const ordered = query.orderBy(sql.raw(`${sort.column} ${sort.direction}`)).orderBy('id', sort.direction)
  return fetchPage(db, ordered, paging)
}

/** What the grants API reads of a grant: the grant and its app's name and client id. */
export interface GrantRecord {
  id: number
  user_id: number
  app_id: number
  app_name: string
  client_id: string
  scopes: string[]
  created_at: Date
  revoked_at: Date | null
}

/** The organization's standing grants, each with its app. */
const standingGrants = (db: Db, organizationId: number) =>
  db
    .selectFrom('app_grants')
    .innerJoin('smart_apps', 'smart_apps.id', 'app_grants.app_id')
    .select([
      'app_grants.id',
      'app_grants.user_id',
      'app_grants.app_id',
      'smart_apps.name as app_name',
      'smart_apps.client_id',
      'app_grants.scopes',
      'app_grants.created_at',
      'app_grants.revoked_at',
    ])
    .where('app_grants.organization_id', '=', organizationId)
    .where('app_grants.revoked_at', 'is', null)

export const APP_GRANT_SORT_COLUMNS: SortColumns<typeof APP_GRANT_SORT_FIELDS> = {
  createdAt: 'app_grants.created_at',
}

export function listGrants(
  db: Db,
  organizationId: number,
  filters: { userId?: number; appId?: number },
  sort: SortOrder,
  paging: PageQuery,
) {
  let query = standingGrants(db, organizationId)
  if (filters.userId !== undefined) query = query.where('app_grants.user_id', '=', filters.userId)
  if (filters.appId !== undefined) query = query.where('app_grants.app_id', '=', filters.appId)
  // Raw SQL is safe: the column comes from APP_GRANT_SORT_COLUMNS, never from the request.
  const ordered = query
    .orderBy(sql.raw(`${sort.column} ${sort.direction}`))
    .orderBy('app_grants.id', sort.direction)
  return fetchPage(db, ordered, paging)
}

/** A standing grant of the organization; with `userId`, only that user's. */
export function findGrant(
  db: Db,
  organizationId: number,
  id: number,
  userId?: number,
): Promise<GrantRecord | undefined> {
  let query = standingGrants(db, organizationId).where('app_grants.id', '=', id)
  if (userId !== undefined) query = query.where('app_grants.user_id', '=', userId)
  return query.executeTakeFirst()
}

/** The organization of a standing grant, whatever the caller's: only to tell 403 from 404. */
export async function grantOwnerOrganization(db: Db, id: number): Promise<number | undefined> {
  const row = await db
    .selectFrom('app_grants')
    .select('organization_id')
    .where('id', '=', id)
    .where('revoked_at', 'is', null)
    .executeTakeFirst()
  return row?.organization_id
}

/**
 * Revokes the organization's standing grants that `pick` picks (by id, by app, or a user's grant
 * to an app); returns their ids and revocation time. Only standing ones: a revocation is recorded once.
 */
export async function revokeGrants(
  trx: Trx,
  organizationId: number,
  by: number,
  pick: { id: number } | { appId: number } | { userId: number; appId: number },
): Promise<{ id: number; revoked_at: Date | null }[]> {
  let query = trx
    .updateTable('app_grants')
    .set({ revoked_at: sql<Date>`now()`, revoked_by: by, updated_at: sql<Date>`now()` })
    .where('organization_id', '=', organizationId)
    .where('revoked_at', 'is', null)
  if ('id' in pick) query = query.where('id', '=', pick.id)
  if ('appId' in pick) query = query.where('app_id', '=', pick.appId)
  if ('userId' in pick) query = query.where('user_id', '=', pick.userId)
  return query.returning(['id', 'revoked_at']).execute()
}

export async function insertGrant(
  trx: Trx,
  grant: { organization_id: number; user_id: number; app_id: number; scopes: string[] },
): Promise<number> {
  const row = await trx.insertInto('app_grants').values(grant).returning('id').executeTakeFirstOrThrow()
  return row.id
}

/** Sessions not ended yet of these grants, ended now for `reason`; returns how many. */
export async function endGrantSessions(trx: Trx, grantIds: number[], reason: string): Promise<number> {
  if (grantIds.length === 0) return 0
  const result = await trx
    .updateTable('sessions')
    .set({ revoked_at: sql<Date>`now()`, revoked_reason: reason })
    .where('app_grant_id', 'in', grantIds)
    .where('revoked_at', 'is', null)
    .executeTakeFirst()
  return Number(result.numUpdatedRows)
}

/** Sessions not ended yet opened for the app's client id (with or without a grant), ended now. */
export async function endClientSessions(trx: Trx, clientId: string, reason: string): Promise<void> {
  await trx
    .updateTable('sessions')
    .set({ revoked_at: sql<Date>`now()`, revoked_reason: reason })
    .where('client_id', '=', clientId)
    .where('revoked_at', 'is', null)
    .execute()
}

/** Moves the live sessions of one grant to another (a new consent that keeps all the old one allowed). */
export async function moveGrantSessions(trx: Trx, from: number[], to: number): Promise<void> {
  if (from.length === 0) return
  await trx
    .updateTable('sessions')
    .set({ app_grant_id: to })
    .where('app_grant_id', 'in', from)
    .where('revoked_at', 'is', null)
    .execute()
}

/** The scopes of the user's standing grant to the app, if any. */
export async function standingGrantScopes(
  trx: Trx,
  organizationId: number,
  userId: number,
  appId: number,
): Promise<string[] | undefined> {
  const row = await trx
    .selectFrom('app_grants')
    .select('scopes')
    .where('organization_id', '=', organizationId)
    .where('user_id', '=', userId)
    .where('app_id', '=', appId)
    .where('revoked_at', 'is', null)
    .forUpdate()
    .executeTakeFirst()
  return row?.scopes
}

export async function insertLaunch(
  trx: Trx,
  launch: {
    launch_hash: string
    organization_id: number
    created_by: number
    app_id: number | null
    patient_id: number
    encounter_id: number | null
    seconds: number
  },
): Promise<Date> {
  const { seconds, ...columns } = launch
  const row = await trx
    .insertInto('launch_contexts')
    .values({ ...columns, expires_at: sql<Date>`now() + make_interval(secs => ${seconds})`, used_at: null })
    .returning('expires_at')
    .executeTakeFirstOrThrow()
  return row.expires_at
}

/**
 * Marks a launch used, if it is unused, unexpired (by the database's clock), of the organization and
 * made for this app or for any; returns its context. A concurrent second redemption finds it used.
 */
export function useLaunch(trx: Trx, hash: string, organizationId: number, appId: number) {
  return trx
    .updateTable('launch_contexts')
    .set({ used_at: sql<Date>`now()` })
    .where('launch_hash', '=', hash)
    .where('organization_id', '=', organizationId)
    .where('used_at', 'is', null)
    .where('expires_at', '>', sql<Date>`now()`)
    .where((eb) => eb.or([eb('app_id', 'is', null), eb('app_id', '=', appId)]))
    .returning(['patient_id', 'encounter_id'])
    .executeTakeFirst()
}
