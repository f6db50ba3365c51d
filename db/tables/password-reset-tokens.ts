import type { ColumnType, Generated } from 'kysely'

export interface PasswordResetTokensTable {
  id: ColumnType<number, never, never>
  user_id: number
  /** SHA-256 of the token sent by mail; the token itself is never stored. */
  token_hash: string
  expires_at: Date
  used_at: Date | null
  created_at: Generated<Date>
}
