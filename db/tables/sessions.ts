import type { Generated, Selectable } from 'kysely'

export interface SessionsTable {
  /** Also the `session_state` claim of the access tokens issued in this session. */
  id: string
  user_id: number
  /** SHA-256 of the refresh token; the token itself is never stored. */
  refresh_token_hash: string
  expires_at: Date
  revoked_at: Date | null
  created_at: Generated<Date>
}

export type SessionRow = Selectable<SessionsTable>
