import type { Generated } from 'kysely'

export interface SessionsTable {
  /** Also the `session_state` claim of the access tokens issued in this session. */
  id: string
  user_id: number
  /** The OAuth client the session was opened for (`azp` of its tokens). */
  client_id: string
  /** Scopes granted besides openid, profile and email (online_access, offline_access). */
  scopes: Generated<string[]>
  expires_at: Date
  revoked_at: Date | null
  /** Why the session ended early: LOGOUT, REFRESH_REUSE, PASSWORD_CHANGE, PASSWORD_RESET. */
  revoked_reason: string | null
  created_at: Generated<Date>
}
