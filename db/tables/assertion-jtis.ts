import type { ColumnType } from 'kysely'

/**
 * The `jti` of every client assertion accepted, kept until the assertion expires: a second use of
 * one is a replay. Expired rows are purged a batch at a time as new ones are recorded.
 */
export interface AssertionJtisTable {
  /** The OAuth client id the assertion names: a client's or a SMART app's. */
  client_id: string
  jti: string
  expires_at: ColumnType<Date, Date | string, Date | string>
}
