import type { Client } from '../../../schemas/clients.js'
import { isRole } from '../../access/roles.js'
import { keySummary } from './keys.js'
import type { ClientRecord } from './queries.js'

export function toClient(row: ClientRecord, now = new Date()): Client {
  const overlapping = row.previous_secret_expires_at !== null && row.previous_secret_expires_at > now
  return {
    id: row.id,
    clientId: row.client_id,
    name: row.name,
    roles: row.roles.filter(isRole),
    active: row.active,
    serviceAccountUserId: row.user_id,
    previousSecretExpiresAt: overlapping ? (row.previous_secret_expires_at as Date).toISOString() : null,
    hasSecret: row.has_secret,
    jwksUrl: row.jwks_url,
    keys: keySummary(row.jwks),
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  }
}
