import type { AppGrant, SmartApp } from '../../../schemas/smart-apps.js'
import { keySummary } from '../clients/service.js'
import type { GrantRecord, SmartAppRow } from './queries.js'

/** The app as the API shows it: never its secret hash (only whether it has one) or its keys' material. */
export function toSmartApp(row: SmartAppRow): SmartApp {
  return {
    id: row.id,
    clientId: row.client_id,
    name: row.name,
    type: row.confidential ? 'confidential' : 'public',
    redirectUris: row.redirect_uris,
    scopes: row.scopes,
    launchUrl: row.launch_url,
    hasSecret: row.secret_hash !== null,
    jwksUrl: row.jwks_url,
    keys: keySummary(row.jwks),
    active: row.disabled_at === null,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  }
}

export function toAppGrant(row: GrantRecord): AppGrant {
  return {
    id: row.id,
    userId: row.user_id,
    appId: row.app_id,
    appName: row.app_name,
    clientId: row.client_id,
    scopes: row.scopes,
    createdAt: row.created_at.toISOString(),
    revokedAt: row.revoked_at === null ? null : row.revoked_at.toISOString(),
  }
}
