import { randomBytes, randomUUID } from 'node:crypto'
import type { Kysely } from 'kysely'
import type { Database } from '../../../db/database.js'
import { AppError } from '../../errors.js'
import { decoyHash, hashPassword, verifyPassword } from '../../lib/passwords.js'
import { checkRoles } from '../users/service.js'
import { clientIdTaken, findClientCredentials, insertClient, insertServiceAccount } from './queries.js'

const CLIENT_ID = /^[a-z0-9][a-z0-9._-]{2,63}$/

export interface NewClient {
  organizationId: number
  clientId: string
  name: string
  roles: string[]
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
  const roles = checkRoles(client.roles)
  const secret = randomBytes(32).toString('base64url')
  const secretHash = await hashPassword(secret)
  if (await clientIdTaken(db, client.clientId)) {
    throw new AppError('RES_002', `A client with id ${client.clientId} already exists`)
  }
  return db.transaction().execute(async (trx) => {
    const userId = await insertServiceAccount(trx, {
      organization_id: client.organizationId,
      subject: randomUUID(),
      email: `${client.clientId}@service-accounts.invalid`,
      password_hash: null,
      first_name: client.name,
      last_name: 'Service Account',
      roles,
      kind: 'SERVICE',
    })
    await insertClient(trx, { client_id: client.clientId, secret_hash: secretHash, user_id: userId })
    return { clientId: client.clientId, secret, userId }
  })
}

/**
 * The service-account user of a confidential client whose secret matches; undefined otherwise.
 * An unknown client costs the same hash comparison as a wrong secret.
 */
export async function authenticateClient(
  db: Kysely<Database>,
  clientId: string,
  secret: string,
): Promise<{ userId: number } | undefined> {
  const client = await findClientCredentials(db, clientId)
  const matches = await verifyPassword(secret, client?.secret_hash ?? (await decoyHash()))
  return client?.active && matches ? { userId: client.user_id } : undefined
}
