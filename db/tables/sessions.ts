import type { ColumnType, Generated } from 'kysely'

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
  /** Why the session ended early: LOGOUT, REFRESH_REUSE, PASSWORD_CHANGE, PASSWORD_RESET, REVOKED (RFC 7009). */
  revoked_reason: string | null
  created_at: Generated<Date>
  /** A SMART app's session: the user's grant to the app, which revoking ends the session with. */
  app_grant_id: ColumnType<number | null, number | null | undefined, number | null>
  /** With online_access: the browser sign-in the app was authorized in; the session ends with it. */
  browser_session_id: ColumnType<string | null, string | null | undefined, string | null>
  /** The SMART launch context its tokens carry (`patient`, `encounter`), kept for every refresh (of the user's organization). */
  launch_patient_id: ColumnType<number | null, number | null | undefined, number | null>
  launch_encounter_id: ColumnType<number | null, number | null | undefined, number | null>
}
