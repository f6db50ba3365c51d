import type { ColumnType, Generated } from 'kysely'
import type { StoredJwks } from './clients.js'

/** A SMART app a practice registered: public (PKCE only) or confidential (a secret or keys). */
export interface SmartAppsTable {
  id: ColumnType<number, never, never>
  organization_id: number
  client_id: string
  name: string
  confidential: boolean
  /** scrypt hash of a confidential app's secret, shown once; null for public apps and key-only ones. */
  secret_hash: string | null
  /** Public keys that verify a confidential app's assertions (private_key_jwt); never with jwks_url. */
  jwks: ColumnType<StoredJwks | null, string | null | undefined, string | null>
  jwks_url: string | null
  /** Where the authorization endpoint may send the user back: matched exactly. */
  redirect_uris: string[]
  /** The scopes the app may be granted, at most. */
  scopes: string[]
  /** Where the EHR opens the app for an EHR launch. */
  launch_url: string | null
  created_by: number
  created_at: Generated<Date>
  updated_at: Generated<Date>
  disabled_at: Date | null
}

/** A user's sign-in on the service's own pages (sign-in, consent, patient picker): a cookie's session. */
export interface BrowserSessionsTable {
  id: string
  /** SHA-256 of the cookie's value. */
  token_hash: string
  user_id: number
  expires_at: Date
  revoked_at: Date | null
  created_at: Generated<Date>
}

/** What a user allowed an app, remembered so the next authorization does not ask again. */
export interface AppGrantsTable {
  id: ColumnType<number, never, never>
  organization_id: number
  user_id: number
  app_id: number
  scopes: string[]
  created_at: Generated<Date>
  updated_at: Generated<Date>
  revoked_at: Date | null
  revoked_by: number | null
}

/** An EHR launch: the context an EHR user opens an app in, redeemed once by its opaque `launch` value. */
export interface LaunchContextsTable {
  /** SHA-256 of the `launch` value. */
  launch_hash: string
  organization_id: number
  created_by: number
  app_id: number | null
  patient_id: number
  encounter_id: number | null
  expires_at: Date
  used_at: Date | null
  created_at: Generated<Date>
}

/** An authorization code: single-use, short-lived, bound to its app, redirect URI, user, scopes and PKCE challenge. */
export interface AuthorizationCodesTable {
  /** SHA-256 of the code. */
  code_hash: string
  organization_id: number
  app_id: number
  user_id: number
  app_grant_id: number
  browser_session_id: string | null
  redirect_uri: string
  scopes: string[]
  /** The S256 PKCE challenge (base64url SHA-256 of the verifier). */
  code_challenge: string
  nonce: string | null
  patient_id: number | null
  encounter_id: number | null
  need_patient_banner: boolean
  expires_at: Date
  /** Set when exchanged; a second exchange ends the session the first one opened. */
  used_at: Date | null
  session_id: string | null
  created_at: Generated<Date>
}
