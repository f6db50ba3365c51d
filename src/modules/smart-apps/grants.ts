import type { Db, Trx } from '../../../db/database.js'
import type { PageOf } from '../../../schemas/common.js'
import type { AppGrant, AppGrantListQuery, MyAppGrantListQuery } from '../../../schemas/smart-apps.js'
import { type Actor, missingRecord } from '../../access/organization-scope.js'
import { auditChange } from '../../audit/change-audit.js'
import { conflict, notFound } from '../../errors.js'
import type { Principal } from '../../identity/principal.js'
import { sortOrder, splitListQuery, toPage } from '../../lib/paging.js'
import { toAppGrant } from './mapper.js'
import {
  APP_GRANT_SORT_COLUMNS,
  endClientSessions,
  endGrantSessions,
  findApp,
  findGrant,
  type GrantRecord,
  grantOwnerOrganization,
  insertGrant,
  listGrants as listGrantRows,
  moveGrantSessions,
  revokeGrants,
  type SmartAppRow,
  standingGrantScopes,
} from './queries.js'

// Why a session ended, in sessions.revoked_reason: its tokens are refused from then on
// (src/identity/revoked-sessions.ts reads every revocation within seconds).
const GRANT_REVOKED = 'GRANT_REVOKED'
const GRANT_REPLACED = 'GRANT_REPLACED'
const APP_DEACTIVATED = 'APP_DEACTIVATED'

const DEFAULT_SORT = { field: 'createdAt', direction: 'desc' } as const

/** The caller's own standing grants, newest first by default. */
export async function listMyGrants(
  db: Db,
  principal: Principal,
  query: MyAppGrantListQuery,
): Promise<PageOf<AppGrant>> {
  return listGrants(db, principal, { ...query, userId: principal.userId })
}

/** The organization's standing grants, of a user or to an app if the query says. */
export async function listGrants(db: Db, actor: Actor, query: AppGrantListQuery): Promise<PageOf<AppGrant>> {
  const { paging, filters } = splitListQuery(query)
  const sort = sortOrder(paging.sort, APP_GRANT_SORT_COLUMNS, DEFAULT_SORT)
  const { rows, total } = await listGrantRows(db, actor.organizationId, filters, sort, paging)
  return toPage(rows.map(toAppGrant), total, paging)
}

/** The organization rule for grants: another organization's is 403, a missing (or revoked) one 404. */
async function missingGrant(db: Db, actor: Actor, id: number): Promise<never> {
  return missingRecord('App grant', id, await grantOwnerOrganization(db, id), actor)
}

export async function getGrant(db: Db, actor: Actor, id: number): Promise<AppGrant> {
  return toAppGrant((await findGrant(db, actor.organizationId, id)) ?? (await missingGrant(db, actor, id)))
}

/** Revokes the grant and ends its sessions; the revocation's audit record commits with it. */
async function revoke(trx: Trx, actor: Actor, grant: GrantRecord): Promise<AppGrant> {
  const [revoked] = await revokeGrants(trx, actor.organizationId, actor.userId, { id: grant.id })
  // Revoked by a concurrent call since it was read: gone for this one.
  if (!revoked) throw notFound(`App grant ${grant.id}`)
  await endGrantSessions(trx, [revoked.id], GRANT_REVOKED)
  await auditChange(trx, [grant.id])
  return toAppGrant({ ...grant, revoked_at: revoked.revoked_at })
}

/** An administrator revokes any standing grant of the organization. */
export async function revokeGrant(db: Db, actor: Actor, id: number): Promise<AppGrant> {
  return db.transaction().execute(async (trx) => {
    const grant = (await findGrant(trx, actor.organizationId, id)) ?? (await missingGrant(trx, actor, id))
    return revoke(trx, actor, grant)
  })
}

/** A user revokes a grant of their own: anyone else's, in any organization, is 404 as if missing. */
export async function revokeMyGrant(db: Db, actor: Principal, id: number): Promise<AppGrant> {
  return db.transaction().execute(async (trx) => {
    const grant = await findGrant(trx, actor.organizationId, id, actor.userId)
    if (!grant) throw notFound(`App grant ${id} among yours`)
    return revoke(trx, actor, grant)
  })
}

/** Every standing grant to a deactivated app revoked, and every session of the app ended. */
export async function revokeAppGrants(trx: Trx, actor: Actor, app: SmartAppRow): Promise<void> {
  const revoked = await revokeGrants(trx, actor.organizationId, actor.userId, { appId: app.id })
  await endGrantSessions(
    trx,
    revoked.map((grant) => grant.id),
    APP_DEACTIVATED,
  )
  await endClientSessions(trx, app.client_id, APP_DEACTIVATED)
}

const covers = (scopes: readonly string[], others: readonly string[]) =>
  others.every((scope) => scopes.includes(scope))

/**
 * Records what a user allowed an app (the consent page): the user's standing grant to the app is
 * replaced by one of these scopes, and its id returned. Sessions of the old grant move to the new one
 * when it allows all the old one did, and end otherwise (they hold scopes no longer granted). The app
 * must be an active app of the organization (409 otherwise).
 */
export async function recordGrant(
  trx: Trx,
  grant: { organizationId: number; userId: number; appId: number; scopes: string[] },
): Promise<number> {
  const { organizationId, userId, appId, scopes } = grant
  const app = await findApp(trx, organizationId, appId)
  if (!app || app.disabled_at !== null) {
    throw conflict(`SMART app ${appId} is not an active app of the organization`)
  }
  const previous = await standingGrantScopes(trx, organizationId, userId, appId)
  // Revoked before the insert: the partial unique index allows one standing grant per user and app.
  const replaced = (await revokeGrants(trx, organizationId, userId, { userId, appId })).map((row) => row.id)
  const id = await insertGrant(trx, {
    organization_id: organizationId,
    user_id: userId,
    app_id: appId,
    scopes,
  })
  if (previous && covers(scopes, previous)) await moveGrantSessions(trx, replaced, id)
  else await endGrantSessions(trx, replaced, GRANT_REPLACED)
  return id
}
