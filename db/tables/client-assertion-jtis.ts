import type { ColumnType } from 'kysely'

/**
 * The `jti` of every client assertion accepted at the token endpoint, kept until the assertion
 * expires: a second use of one is a replay. Expired rows are purged a batch at a time as new ones
 * are recorded.
 */
export interface ClientAssertionJtisTable {
  /** clients.id (not the OAuth client_id). */
  client_id: number
  jti: string
  expires_at: ColumnType<Date, Date | string, Date | string>
}
