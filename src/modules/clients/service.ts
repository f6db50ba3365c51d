import { randomBytes, randomUUID } from 'node:crypto'
import type { Db, Trx } from '../../../db/database.js'
import type { StoredJwks } from '../../../db/tables/clients.js'
import {
  type Client,
  type ClientListQuery,
  type ClientWithSecret,
  type CreateClientBody,
  type PatchClientBody,
  UpdateClientBody,
} from '../../../schemas/clients.js'
import type { PageOf } from '../../../schemas/common.js'
import { type Actor, missingRecord } from '../../access/organization-scope.js'
import { auditChange } from '../../audit/change-audit.js'
import { AppError, conflict, invalidField, invalidFields } from '../../errors.js'
import { decoyHash, hashPassword, verifyPassword, withHashing } from '../../identity/password-hashing.js'
import { applyMergePatch, projectOnto } from '../../lib/merge-patch.js'
import { sortOrder, splitListQuery, toPage } from '../../lib/paging.js'
import { checkTarget, systemResolver, type TargetPolicy, TargetRefused } from '../../outbox/targets.js'
import { checkRoles } from '../users/service.js'
import { AssertionRefused, type KeySource, verifyAssertion } from './assertions.js'
import { type JwksFetcher, KeySetUnavailable } from './jwks-fetcher.js'
import { checkJwks } from './keys.js'
import { toClient } from './mapper.js'
import {
  CLIENT_SORT_COLUMNS,
  type ClientRecord,
  clientIdTaken,
  clientOwnerOrganization,
  findClient,
  findClientCredentials,
  findClientKeys,
  insertClient,
  insertServiceAccount,
  listClients as listClientRows,
  lockClient,
  recordAssertionJti,
  secretHashOf,
  touchClient,
  updateServiceAccount,
} from './queries.js'

export { AssertionRefused, claimedClient, JWT_BEARER } from './assertions.js'
export { createJwksFetcher, type JwksFetcher } from './jwks-fetcher.js'
// SMART apps register their keys under the same rules (src/modules/smart-apps).
export { keySummary } from './keys.js'

const CLIENT_ID = /^[a-z0-9][a-z0-9._-]{2,63}$/

/** Public keys a client signs its assertions with: a key set, or the URL it publishes one at. */
export interface KeyRegistration {
  jwks?: unknown
  jwksUrl?: string
}

export interface NewClient {
  organizationId: number
  clientId: string
  name: string
  roles: string[]
}

/** What the clients API needs besides the database. */
export interface ClientSettings {
  /**
   * With an external identity provider the embedded token endpoint is off, so a secret issued here
   * would be useless: integrations are registered at the provider.
   */
  external: boolean
  /** How long a rotated secret keeps working beside the new one. */
  secretOverlapSeconds: number
  /** Which JWKS URLs may be registered: the webhook address policy; https and public hosts only if unset. */
  jwksUrls?: TargetPolicy
}

/** The address policy without the development allowances: https, and hosts on public addresses only. */
export const PUBLIC_HTTPS_ONLY: TargetPolicy = {
  allowHttp: false,
  allowPrivateTargets: false,
  resolve: systemResolver,
}

/** The key columns of a registration, checked: public keys only, or a URL the policy allows. */
export async function keyColumns(
  registration: KeyRegistration,
  policy: TargetPolicy,
): Promise<{ jwks: string | null; jwks_url: string | null }> {
  const { jwks, jwksUrl } = registration
  if (jwks !== undefined && jwksUrl !== undefined) {
    throw invalidFields(
      [{ path: 'jwksUrl', message: 'must not be sent with jwks' }],
      'Register jwks or jwksUrl, not both',
    )
  }
  if (jwksUrl !== undefined) {
    try {
      await checkTarget(jwksUrl, policy)
    } catch (error) {
      if (error instanceof TargetRefused) throw invalidField('jwksUrl', error.problem)
      throw error
    }
  }
  return {
    jwks: jwks === undefined ? null : JSON.stringify(checkJwks(jwks)),
    jwks_url: jwksUrl ?? null,
  }
}

const hasKeys = (columns: { jwks: string | null; jwks_url: string | null }) =>
  columns.jwks !== null || columns.jwks_url !== null

/** 32 random bytes: the secret, shown once, and its hash, the only thing stored. */
async function newSecret(): Promise<{ secret: string; hash: string }> {
  const secret = randomBytes(32).toString('base64url')
  return { secret, hash: await hashPassword(secret) }
}

/** The client row and the service-account user it acts as; returns the ids of both. */
async function insertNewClient(
  trx: Trx,
  client: NewClient,
  credentials: { secret_hash: string; secret_enabled: boolean; jwks: string | null; jwks_url: string | null },
): Promise<{ id: number; userId: number }> {
  const userId = await insertServiceAccount(trx, {
    organization_id: client.organizationId,
    subject: randomUUID(),
    email: `${client.clientId}@service-accounts.invalid`,
    password_hash: null,
    first_name: client.name,
    last_name: 'Service Account',
    roles: checkRoles(client.roles),
    kind: 'SERVICE',
  })
  const id = await insertClient(trx, { client_id: client.clientId, ...credentials, user_id: userId })
  return { id, userId }
}

/** A client with the chosen id (command line): the id checked, then the row and its service account. */
async function insertChosenClient(
  db: Db,
  client: NewClient,
  keys: { jwks: string | null; jwks_url: string | null },
): Promise<{ secret: string; userId: number }> {
  if (!CLIENT_ID.test(client.clientId)) {
    throw invalidField('clientId', 'must be 3-64 lowercase letters, digits, dots, dashes or underscores')
  }
  checkRoles(client.roles)
  const { secret, hash } = await newSecret()
  if (await clientIdTaken(db, client.clientId)) {
    throw new AppError('RES_002', `A client with id ${client.clientId} already exists`)
  }
  const credentials = { secret_hash: hash, secret_enabled: !hasKeys(keys), ...keys }
  const { userId } = await db.transaction().execute((trx) => insertNewClient(trx, client, credentials))
  return { secret, userId }
}

/**
 * A confidential client for a server-to-server integration. It acts as its own service-account
 * user (roles and organization like any user) and proves itself with a secret that is returned
 * once, here, and stored only as a hash.
 */
export async function createClient(
  db: Db,
  client: NewClient,
): Promise<{ clientId: string; secret: string; userId: number }> {
  const { secret, userId } = await insertChosenClient(db, client, { jwks: null, jwks_url: null })
  return { clientId: client.clientId, secret, userId }
}

/**
 * A confidential client that proves itself with assertions signed by its private key, verified
 * with the public keys registered here (a key set, or the URL the client publishes one at). It
 * has no working secret until one is rotated in.
 */
export async function createClientWithKeys(
  db: Db,
  client: NewClient,
  registration: KeyRegistration,
  jwksUrls: TargetPolicy = PUBLIC_HTTPS_ONLY,
): Promise<{ clientId: string; userId: number }> {
  const keys = await keyColumns(registration, jwksUrls)
  if (!hasKeys(keys)) {
    throw invalidFields(
      [{ path: 'jwks', message: 'or jwksUrl is required' }],
      'jwks or jwksUrl is required',
      'VAL_002',
    )
  }
  const { userId } = await insertChosenClient(db, client, keys)
  return { clientId: client.clientId, userId }
}

/**
 * The service-account user of a confidential client whose secret matches the current one, or the
 * previous one while its overlap after a rotation lasts; undefined otherwise (also for a
 * deactivated client). An unknown client and a wrong secret cost the same two hash comparisons.
 */
export async function authenticateClient(
  db: Db,
  clientId: string,
  secret: string,
): Promise<{ userId: number } | undefined> {
  return withHashing(async () => {
    const client = await findClientCredentials(db, clientId)
    let matches = await verifyPassword(secret, client?.secret_hash ?? (await decoyHash()))
    if (!matches) matches = await verifyPassword(secret, client?.previous_secret_hash ?? (await decoyHash()))
    return client?.active && matches ? { userId: client.user_id } : undefined
  })
}

/** Where a client's or a SMART app's public keys are: stored as a key set, or published at a URL. */
export interface RegisteredKeys {
  jwks: StoredJwks | null
  jwks_url: string | null
}

/**
 * Authenticates `clientId` by its assertion (RFC 7523 `private_key_jwt`, as SMART profiles it for
 * Backend Services and for confidential apps): signed with one of `registered` keys, meant for
 * this token endpoint (one of `audiences`), unexpired, and with a jti the client never used before,
 * which is recorded. Throws AssertionRefused otherwise, also when nothing is registered.
 */
export async function verifyClientAssertion(
  db: Db,
  fetcher: JwksFetcher,
  clientId: string,
  registered: RegisteredKeys,
  assertion: string,
  audiences: readonly string[],
): Promise<void> {
  const { jwks, jwks_url: url } = registered
  let keys: KeySource
  if (jwks) keys = async (refresh) => (refresh ? undefined : jwks)
  else if (url) {
    keys = async (refresh) => {
      try {
        return await (refresh ? fetcher.refresh(url) : fetcher.get(url))
      } catch (error) {
        if (error instanceof KeySetUnavailable) throw new AssertionRefused(undefined, true)
        throw error
      }
    }
  } else throw new AssertionRefused()
  const { jti, rememberUntil } = await verifyAssertion(assertion, keys, { clientId, audiences })
  if (!(await recordAssertionJti(db, clientId, jti, rememberUntil))) {
    throw new AssertionRefused('The client assertion was used before (jti)')
  }
}

/**
 * The service-account user of the client whose assertion this is (`verifyClientAssertion`).
 * Throws AssertionRefused for an assertion that does not authenticate it, and for an unknown or
 * deactivated client or one without keys.
 */
export async function authenticateClientAssertion(
  db: Db,
  fetcher: JwksFetcher,
  clientId: string,
  assertion: string,
  audiences: readonly string[],
): Promise<{ userId: number }> {
  const client = await findClientKeys(db, clientId)
  if (!client?.active) throw new AssertionRefused()
  await verifyClientAssertion(db, fetcher, clientId, client, assertion, audiences)
  return { userId: client.user_id }
}

const notHere = (what: string) =>
  conflict(
    `${what}: with an external identity provider (OIDC_ISSUER_URL) integrations are registered at the provider`,
  )

/** The organization rule for clients: another organization's is 403, a missing one 404. */
async function missingClient(db: Db, actor: Actor, id: number): Promise<never> {
  return missingRecord('Client', id, await clientOwnerOrganization(db, id), actor)
}

async function requireClient(db: Db, actor: Actor, id: number): Promise<ClientRecord> {
  return (await findClient(db, actor.organizationId, id)) ?? missingClient(db, actor, id)
}

async function lockClientFor(trx: Trx, actor: Actor, id: number): Promise<ClientRecord> {
  return (await lockClient(trx, actor.organizationId, id)) ?? missingClient(trx, actor, id)
}

/** A client id readable in logs: the name's letters and digits, and a random suffix for uniqueness. */
function generatedClientId(name: string): string {
  const slug = name
    .normalize('NFKD')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .slice(0, 40)
    .replace(/^-+|-+$/g, '')
  return `${slug || 'client'}-${randomBytes(4).toString('hex')}`
}

const DEFAULT_SORT = { field: 'name', direction: 'asc' } as const

export async function listClients(db: Db, actor: Actor, query: ClientListQuery): Promise<PageOf<Client>> {
  const { paging, filters } = splitListQuery(query)
  const { rows, total } = await listClientRows(
    db,
    actor.organizationId,
    filters,
    sortOrder(paging.sort, CLIENT_SORT_COLUMNS, DEFAULT_SORT),
    paging,
  )
  const now = new Date()
  return toPage(
    rows.map((row) => toClient(row, now)),
    total,
    paging,
  )
}

export async function getClient(db: Db, actor: Actor, id: number): Promise<Client> {
  return toClient(await requireClient(db, actor, id))
}

/**
 * A new confidential client of the caller's organization. Registered without keys it gets a secret,
 * which the response is the only place of; with keys, none that works (rotate-secret makes one).
 */
export async function registerClient(
  db: Db,
  actor: Actor,
  body: CreateClientBody,
  settings: ClientSettings,
): Promise<ClientWithSecret> {
  if (settings.external) throw notHere('Clients cannot be registered here')
  const keys = await keyColumns(body, settings.jwksUrls ?? PUBLIC_HTTPS_ONLY)
  const { secret, hash } = await newSecret()
  const enabled = !hasKeys(keys)
  const client = {
    organizationId: actor.organizationId,
    clientId: generatedClientId(body.name),
    name: body.name,
    roles: body.roles,
  }
  const id = await db.transaction().execute(async (trx) => {
    const { id } = await insertNewClient(trx, client, { secret_hash: hash, secret_enabled: enabled, ...keys })
    await auditChange(trx, [id])
    return id
  })
  const created = toClient(await requireClient(db, actor, id))
  return enabled ? { ...created, secret } : created
}

/** Replaces name, roles and keys; a client without a secret must keep some keys. */
export async function updateClient(
  db: Db,
  actor: Actor,
  id: number,
  body: UpdateClientBody,
  settings: ClientSettings,
): Promise<Client> {
  // Checked before the transaction: a URL's host is resolved, which takes a while.
  const keys = await keyColumns(body, settings.jwksUrls ?? PUBLIC_HTTPS_ONLY)
  return db.transaction().execute(async (trx) => {
    const client = await lockClientFor(trx, actor, id)
    if (!client.has_secret && !hasKeys(keys)) {
      throw invalidFields(
        [{ path: 'jwks', message: 'or jwksUrl is required: the client has no secret' }],
        'The client has no secret: it needs jwks or jwksUrl (rotate-secret gives it a secret)',
      )
    }
    const rekeyed = await touchClient(trx, actor.organizationId, id, keys)
    const updated = await updateServiceAccount(trx, actor.organizationId, rekeyed, {
      first_name: body.name,
      roles: checkRoles(body.roles),
    })
    // Recorded as a replacement, whether or not it differed from what the client held.
    await auditChange(trx, [id])
    return toClient(updated)
  })
}

/**
 * A JSON Merge Patch of the client: the merged client is checked like a full replacement. The
 * registered key set is merged as stored, though the API shows only its key ids.
 */
export async function patchClient(
  db: Db,
  actor: Actor,
  id: number,
  patch: PatchClientBody,
  validate: (merged: unknown) => UpdateClientBody,
  settings: ClientSettings,
): Promise<Client> {
  const record = await requireClient(db, actor, id)
  const current = {
    ...(projectOnto(UpdateClientBody, toClient(record)) as object),
    ...(record.jwks ? { jwks: record.jwks } : {}),
  }
  const body = validate(applyMergePatch(current, patch))
  return updateClient(db, actor, id, body, settings)
}

/**
 * A new secret. The one it replaces keeps working beside it for the overlap, so the integration
 * can switch without a refused token request; a second rotation within the overlap retires the
 * oldest at once (only one previous secret is kept).
 */
export async function rotateClientSecret(
  db: Db,
  actor: Actor,
  id: number,
  settings: ClientSettings,
): Promise<ClientWithSecret & { secret: string }> {
  const { secret, hash } = await newSecret()
  return db.transaction().execute(async (trx) => {
    // Found first, so that another organization's client is 403 in either mode.
    await lockClientFor(trx, actor, id)
    if (settings.external) throw notHere('Client secrets cannot be rotated here')
    // A client that had keys only has no previous secret to keep.
    const previous = settings.secretOverlapSeconds > 0 ? await secretHashOf(trx, id) : null
    const updated = await touchClient(trx, actor.organizationId, id, {
      secret_hash: hash,
      secret_enabled: true,
      previous_secret_hash: previous,
      previous_secret_seconds: previous === null ? null : settings.secretOverlapSeconds,
    })
    await auditChange(trx, [id])
    return { ...toClient(updated), secret }
  })
}

/** The client is refused at the token endpoint from now on; its access tokens stop within 30 seconds. */
export async function deactivateClient(db: Db, actor: Actor, id: number): Promise<Client> {
  return setActive(db, actor, id, false)
}

export async function reactivateClient(db: Db, actor: Actor, id: number): Promise<Client> {
  return setActive(db, actor, id, true)
}

async function setActive(db: Db, actor: Actor, id: number, active: boolean): Promise<Client> {
  return db.transaction().execute(async (trx) => {
    const client = await lockClientFor(trx, actor, id)
    if (client.active === active) return toClient(client)
    const updated = await updateServiceAccount(trx, actor.organizationId, client, { active })
    await auditChange(trx, [id])
    return toClient(updated)
  })
}
