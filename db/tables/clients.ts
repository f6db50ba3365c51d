import type { ColumnType, Generated } from 'kysely'

/** Confidential OAuth clients for server-to-server integrations; each acts as its service-account user. */
export interface ClientsTable {
  id: ColumnType<number, never, never>
  client_id: string
  /** scrypt hash of the client secret, which is shown once at creation. */
  secret_hash: string
  user_id: number
  created_at: Generated<Date>
  updated_at: Generated<Date>
}
