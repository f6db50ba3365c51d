import { randomBytes, randomUUID } from 'node:crypto'
import type { Kysely } from 'kysely'
import type { Database, Db, Trx } from '../../../db/database.js'
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
import { AppError, conflict } from '../../errors.js'
import { applyMergePatch, projectOnto } from '../../lib/merge-patch.js'
import { sortOrder, toPage } from '../../lib/paging.js'
import { decoyHash, hashPassword, verifyPassword } from '../../lib/passwords.js'
import { checkRoles } from '../users/service.js'
import { toClient } from './mapper.js'
import {
  CLIENT_SORT_COLUMNS,
  type ClientRecord,
  clientIdTaken,
  clientOwnerOrganization,
  findClient,
  findClientCredentials,
  insertClient,
  insertServiceAccount,
  listClients as listClientRows,
  lockClient,
  secretHashOf,
  touchClient,
  updateServiceAccount,
} from './queries.js'

const CLIENT_ID = /^[a-z0-9][a-z0-9._-]{2,63}$/

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
}

/** 32 random bytes: the secret, shown once, and its hash, the only thing stored. */
async function newSecret(): Promise<{ secret: string; hash: string }> {
  const secret = randomBytes(32).toString('base64url')
  return { secret, hash: await hashPassword(secret) }
}

/** The client row and the service-account user it acts as; returns the ids of both. */
async function insertNewClient(
  trx: Trx,
  client: NewClient,
  secretHash: string,
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
  const id = await insertClient(trx, { client_id: client.clientId, secret_hash: secretHash, user_id: userId })
  return { id, userId }
}

/**
 * A confidential client for a server-to-server integration. It acts as its own service-account
 * user (roles and organization like any user) and proves itself with a secret that is returned
 * once, here, and stored only as a hash.
 */
export async function createClient(
  db: Kysely<Database>,
  client: NewClient,
): Promise<{ clientId: string; secret: string; userId: number }> {
  if (!CLIENT_ID.test(client.clientId)) {
    throw new AppError(
      'VAL_001',
      'client id must be 3-64 lowercase letters, digits, dots, dashes or underscores',
    )
  }
  checkRoles(client.roles)
  const { secret, hash } = await newSecret()
  if (await clientIdTaken(db, client.clientId)) {
    throw new AppError('RES_002', `A client with id ${client.clientId} already exists`)
  }
  const { userId } = await db.transaction().execute((trx) => insertNewClient(trx, client, hash))
  return { clientId: client.clientId, secret, userId }
}

/**
 * The service-account user of a confidential client whose secret matches the current one, or the
 * previous one while its overlap after a rotation lasts; undefined otherwise (also for a
 * deactivated client). An unknown client and a wrong secret cost the same two hash comparisons.
 */
export async function authenticateClient(
  db: Kysely<Database>,
  clientId: string,
  secret: string,
): Promise<{ userId: number } | undefined> {
  const client = await findClientCredentials(db, clientId)
  let matches = await verifyPassword(secret, client?.secret_hash ?? (await decoyHash()))
  if (!matches) matches = await verifyPassword(secret, client?.previous_secret_hash ?? (await decoyHash()))
  return client?.active && matches ? { userId: client.user_id } : undefined
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

export async function listClients(
  db: Kysely<Database>,
  actor: Actor,
  query: ClientListQuery,
): Promise<PageOf<Client>> {
  const { page, size, sort, ...filters } = query
  const paging = { page, size }
  const { rows, total } = await listClientRows(
    db,
    actor.organizationId,
    filters,
    sortOrder(sort, CLIENT_SORT_COLUMNS, DEFAULT_SORT),
    paging,
  )
  const now = new Date()
  return toPage(
    rows.map((row) => toClient(row, now)),
    total,
    paging,
  )
}

export async function getClient(db: Kysely<Database>, actor: Actor, id: number): Promise<Client> {
  return toClient(await requireClient(db, actor, id))
}

/** A new confidential client of the caller's organization; the response is the only place its secret appears. */
export async function registerClient(
  db: Kysely<Database>,
  actor: Actor,
  body: CreateClientBody,
  settings: ClientSettings,
): Promise<ClientWithSecret> {
  if (settings.external) throw notHere('Clients cannot be registered here')
  const { secret, hash } = await newSecret()
  const client = { organizationId: actor.organizationId, clientId: generatedClientId(body.name), ...body }
  const { id } = await db.transaction().execute((trx) => insertNewClient(trx, client, hash))
  return { ...toClient(await requireClient(db, actor, id)), secret }
}

export async function updateClient(
  db: Kysely<Database>,
  actor: Actor,
  id: number,
  body: UpdateClientBody,
): Promise<Client> {
  return db.transaction().execute(async (trx) => {
    const client = await lockClientFor(trx, actor, id)
    const updated = await updateServiceAccount(trx, actor.organizationId, client, {
      first_name: body.name,
      roles: checkRoles(body.roles),
    })
    return toClient(updated)
  })
}

/** A JSON Merge Patch of the client: the merged client is checked like a full replacement. */
export async function patchClient(
  db: Kysely<Database>,
  actor: Actor,
  id: number,
  patch: PatchClientBody,
  validate: (merged: unknown) => UpdateClientBody,
): Promise<Client> {
  const current = await getClient(db, actor, id)
  const body = validate(applyMergePatch(projectOnto(UpdateClientBody, current), patch))
  return updateClient(db, actor, id, body)
}

/**
 * A new secret. The one it replaces keeps working beside it for the overlap, so the integration
 * can switch without a refused token request; a second rotation within the overlap retires the
 * oldest at once (only one previous secret is kept).
 */
export async function rotateClientSecret(
  db: Kysely<Database>,
  actor: Actor,
  id: number,
  settings: ClientSettings,
): Promise<ClientWithSecret> {
  const { secret, hash } = await newSecret()
  return db.transaction().execute(async (trx) => {
    // Found first, so that another organization's client is 403 in either mode.
    await lockClientFor(trx, actor, id)
    if (settings.external) throw notHere('Client secrets cannot be rotated here')
    const overlap = settings.secretOverlapSeconds > 0
    const updated = await touchClient(trx, actor.organizationId, id, {
      secret_hash: hash,
      previous_secret_hash: overlap ? await secretHashOf(trx, id) : null,
      previous_secret_seconds: overlap ? settings.secretOverlapSeconds : null,
    })
    return { ...toClient(updated), secret }
  })
}

/** The client is refused at the token endpoint from now on; its access tokens stop within 30 seconds. */
export async function deactivateClient(db: Kysely<Database>, actor: Actor, id: number): Promise<Client> {
  return setActive(db, actor, id, false)
}

export async function reactivateClient(db: Kysely<Database>, actor: Actor, id: number): Promise<Client> {
  return setActive(db, actor, id, true)
}

async function setActive(db: Kysely<Database>, actor: Actor, id: number, active: boolean): Promise<Client> {
  return db.transaction().execute(async (trx) => {
    const client = await lockClientFor(trx, actor, id)
    if (client.active === active) return toClient(client)
    return toClient(await updateServiceAccount(trx, actor.organizationId, client, { active }))
  })
}
