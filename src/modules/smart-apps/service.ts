import { randomBytes } from 'node:crypto'
import type { Db } from '../../../db/database.js'
import type { PageOf } from '../../../schemas/common.js'
import {
  type CreateSmartAppBody,
  type PatchSmartAppBody,
  type SmartApp,
  type SmartAppListQuery,
  type SmartAppWithSecret,
  UpdateSmartAppBody,
} from '../../../schemas/smart-apps.js'
import { type Actor, missingRecord } from '../../access/organization-scope.js'
import { auditChange } from '../../audit/change-audit.js'
import { conflict, type FieldProblems, invalidFields } from '../../errors.js'
import { decoyHash, hashPassword, verifyPassword, withHashing } from '../../identity/password-hashing.js'
import { applyMergePatch, projectOnto } from '../../lib/merge-patch.js'
import { sortOrder, splitListQuery, toPage } from '../../lib/paging.js'
import type { TargetPolicy } from '../../outbox/targets.js'
import {
  AssertionRefused,
  type JwksFetcher,
  keyColumns,
  PUBLIC_HTTPS_ONLY,
  verifyClientAssertion,
} from '../clients/service.js'
import { newClientId } from './client-ids.js'
import { revokeAppGrants } from './grants.js'
import { toSmartApp } from './mapper.js'
import {
  appOwnerOrganization,
  currentKeys,
  currentSecretHash,
  disableApp,
  findActiveAppByClientId,
  findApp,
  insertApp,
  listApps as listAppRows,
  lockApp,
  SMART_APP_SORT_COLUMNS,
  type SmartAppRow,
  updateApp,
} from './queries.js'
import { scopeProblems, urlProblems } from './registration-rules.js'

export { getGrant, listGrants, listMyGrants, recordGrant, revokeGrant, revokeMyGrant } from './grants.js'
export { createLaunch, type LaunchSettings, redeemLaunch } from './launches.js'
export type { SmartAppRow } from './queries.js'

/** What the apps API needs besides the database. */
export interface SmartAppSettings {
  /**
   * With an external identity provider the embedded authorization and token endpoints are off, so
   * an app registered here could never sign anyone in: apps are registered at the provider.
   */
  external: boolean
  /** Which JWKS URLs may be registered: the clients' policy (the webhook address policy). */
  jwksUrls?: TargetPolicy
  /** The resource types the FHIR interface serves: an app's resource scopes name one of them, or `*`. */
  resourceTypes: ReadonlySet<string>
}

const notHere = (what: string) =>
  conflict(
    `${what}: with an external identity provider (OIDC_ISSUER_URL) apps are registered at the provider`,
  )

/** 32 random bytes: the secret, shown once, and its scrypt hash, the only thing stored (as for clients). */
async function newSecret(): Promise<{ secret: string; hash: string }> {
  const secret = randomBytes(32).toString('base64url')
  return { secret, hash: await hashPassword(secret) }
}

/** The organization rule for apps: another organization's is 403, a missing one 404. */
async function missingApp(db: Db, actor: Actor, id: number): Promise<never> {
  return missingRecord('SMART app', id, await appOwnerOrganization(db, id), actor)
}

/** The app, if of the caller's organization; otherwise 403 or 404. */
async function requireApp(db: Db, actor: Actor, id: number): Promise<SmartAppRow> {
  return (await findApp(db, actor.organizationId, id)) ?? missingApp(db, actor, id)
}

/** An app's URLs, scopes and keys checked: 422 naming every problem at its field. */
async function checkedRegistration(
  body: UpdateSmartAppBody,
  confidential: boolean,
  settings: SmartAppSettings,
): Promise<{ jwks: string | null; jwks_url: string | null }> {
  const problems: FieldProblems = [
    ...urlProblems(body),
    ...scopeProblems(body.scopes, settings.resourceTypes),
  ]
  if (!confidential) {
    for (const field of ['jwks', 'jwksUrl'] as const) {
      if (body[field] !== undefined)
        problems.push({ path: field, message: 'only a confidential app has keys' })
    }
  }
  if (problems.length > 0) throw invalidFields(problems)
  return keyColumns(body, settings.jwksUrls ?? PUBLIC_HTTPS_ONLY)
}

const DEFAULT_SORT = { field: 'name', direction: 'asc' } as const

export async function listApps(db: Db, actor: Actor, query: SmartAppListQuery): Promise<PageOf<SmartApp>> {
  const { paging, filters } = splitListQuery(query)
  const sort = sortOrder(paging.sort, SMART_APP_SORT_COLUMNS, DEFAULT_SORT)
  const { rows, total } = await listAppRows(db, actor.organizationId, filters, sort, paging)
  return toPage(rows.map(toSmartApp), total, paging)
}

export async function getApp(db: Db, actor: Actor, id: number): Promise<SmartApp> {
  return toSmartApp(await requireApp(db, actor, id))
}

/**
 * A new SMART app of the caller's organization. A confidential app registered without keys gets a
 * secret, which the response is the only place of.
 */
export async function registerApp(
  db: Db,
  actor: Actor,
  body: CreateSmartAppBody,
  settings: SmartAppSettings,
): Promise<SmartAppWithSecret> {
  if (settings.external) throw notHere('SMART apps cannot be registered here')
  const confidential = body.type === 'confidential'
  const keys = await checkedRegistration(body, confidential, settings)
  const secret = confidential && keys.jwks === null && keys.jwks_url === null ? await newSecret() : undefined
  const row = await db.transaction().execute(async (trx) => {
    const row = await insertApp(trx, {
      organization_id: actor.organizationId,
      client_id: newClientId(),
      name: body.name,
      confidential,
      secret_hash: secret?.hash ?? null,
      ...keys,
      redirect_uris: body.redirectUris,
      scopes: body.scopes,
      launch_url: body.launchUrl ?? null,
      created_by: actor.userId,
      disabled_at: null,
    })
    await auditChange(trx, [row.id])
    return row
  })
  const app = toSmartApp(row)
  return secret ? { ...app, clientSecret: secret.secret } : app
}

/**
 * A JSON Merge Patch of the app: the merged app is checked like a registration. Narrowing its scopes
 * leaves grants as they are; the authorization endpoint grants no more than the app's scopes.
 */
export async function patchApp(
  db: Db,
  actor: Actor,
  id: number,
  patch: PatchSmartAppBody,
  validate: (merged: unknown) => UpdateSmartAppBody,
  settings: SmartAppSettings,
): Promise<SmartApp> {
  const record = await requireApp(db, actor, id)
  const current = {
    ...(projectOnto(UpdateSmartAppBody, toSmartApp(record)) as object),
    ...(record.jwks ? { jwks: record.jwks } : {}),
  }
  const body = validate(applyMergePatch(current, patch))
  // Checked before the transaction: a JWKS URL's host is resolved, which takes a while.
  const keys = await checkedRegistration(body, record.confidential, settings)
  return db.transaction().execute(async (trx) => {
    const app = (await lockApp(trx, actor.organizationId, id)) ?? (await missingApp(trx, actor, id))
    if (app.confidential && app.secret_hash === null && keys.jwks === null && keys.jwks_url === null) {
      throw invalidFields(
        [{ path: 'jwks', message: 'or jwksUrl is required: the app has no secret' }],
        'The app has no secret: it needs jwks or jwksUrl (rotate-secret gives it a secret)',
      )
    }
    const updated = await updateApp(trx, actor.organizationId, id, {
      name: body.name,
      redirect_uris: body.redirectUris,
      scopes: body.scopes,
      launch_url: body.launchUrl ?? null,
      ...keys,
    })
    await auditChange(trx, [id])
    return toSmartApp(updated)
  })
}

/** A new secret for a confidential app; the old one stops working at once (apps are interactive). */
export async function rotateAppSecret(
  db: Db,
  actor: Actor,
  id: number,
  settings: SmartAppSettings,
): Promise<SmartAppWithSecret> {
  const { secret, hash } = await newSecret()
  return db.transaction().execute(async (trx) => {
    // Found first, so that another organization's app is 403 in either mode.
    const app = (await lockApp(trx, actor.organizationId, id)) ?? (await missingApp(trx, actor, id))
    if (settings.external) throw notHere('SMART app secrets cannot be rotated here')
    if (!app.confidential) throw conflict('A public app has no secret: it authorizes with PKCE alone')
    const updated = await updateApp(trx, actor.organizationId, id, { secret_hash: hash })
    await auditChange(trx, [id])
    return { ...toSmartApp(updated), clientSecret: secret }
  })
}

/**
 * The authorization and token endpoints refuse the app from now on; every standing grant to it is
 * revoked and its sessions end, so its access tokens stop working within seconds.
 */
export async function deactivateApp(db: Db, actor: Actor, id: number): Promise<SmartApp> {
  return db.transaction().execute(async (trx) => {
    const app = (await lockApp(trx, actor.organizationId, id)) ?? (await missingApp(trx, actor, id))
    if (app.disabled_at !== null) return toSmartApp(app)
    const disabled = await disableApp(trx, actor.organizationId, id)
    await revokeAppGrants(trx, actor, app)
    await auditChange(trx, [id])
    return toSmartApp(disabled)
  })
}

/** The app may be authorized again; grants revoked by its deactivation stay revoked (users consent anew). */
export async function reactivateApp(db: Db, actor: Actor, id: number): Promise<SmartApp> {
  return db.transaction().execute(async (trx) => {
    const app = (await lockApp(trx, actor.organizationId, id)) ?? (await missingApp(trx, actor, id))
    if (app.disabled_at === null) return toSmartApp(app)
    const updated = await updateApp(trx, actor.organizationId, id, { disabled_at: null })
    await auditChange(trx, [id])
    return toSmartApp(updated)
  })
}

/** The app with this client id, unless deactivated: for the authorization and token endpoints. */
export function findActiveApp(db: Db, clientId: string): Promise<SmartAppRow | undefined> {
  return findActiveAppByClientId(db, clientId)
}

/**
 * Whether the credentials authenticate the app at the token endpoint. A public app has none to
 * present (PKCE proves it), so sending a secret is refused. A confidential app's secret is checked
 * against its current hash (re-read, so a rotation or deactivation since `app` was read counts) with
 * the clients' constant-time scrypt check; a wrong secret and a missing hash cost the same. An app
 * registered with keys and no secret authenticates with an assertion instead (authenticateAppAssertion).
 */
export async function authenticateApp(
  db: Db,
  app: SmartAppRow,
  credentials: { secret?: string },
): Promise<boolean> {
  const { secret } = credentials
  if (!app.confidential) return secret === undefined
  if (secret === undefined) return false
  return withHashing(async () => {
    const hash = await currentSecretHash(db, app.id)
    const matches = await verifyPassword(secret, hash ?? (await decoyHash()))
    return hash !== null && matches
  })
}

/**
 * Authenticates a confidential app by a client assertion signed with one of its registered keys
 * (SMART's client-confidential-asymmetric), verified as a Backend Services client's is: RS384 or
 * ES384, `iss` and `sub` its client id, `aud` one of `audiences`, at most 5 minutes to run, a jti
 * used once. The keys are re-read, so a change or a deactivation since `app` was read counts.
 * Throws AssertionRefused otherwise, also for a public app or one without keys.
 */
export async function authenticateAppAssertion(
  db: Db,
  fetcher: JwksFetcher,
  app: SmartAppRow,
  assertion: string,
  audiences: readonly string[],
): Promise<void> {
  const keys = await currentKeys(db, app.id)
  if (!keys?.confidential) throw new AssertionRefused()
  await verifyClientAssertion(db, fetcher, app.client_id, keys, assertion, audiences)
}
