import type { ColumnType, Generated } from 'kysely'

/** Every refresh token a session has had; only the newest is unrotated. Stores SHA-256 hashes only. */
export interface RefreshTokensTable {
  id: ColumnType<number, never, never>
  session_id: string
  token_hash: string
  expires_at: Date
  /** Set when the token was exchanged; presenting it again means it leaked. */
  rotated_at: Date | null
  created_at: Generated<Date>
}
