import type { ColumnType, Generated, Selectable } from 'kysely'

/** Confidential OAuth clients for server-to-server integrations; each acts as its service-account user. */
export interface ClientsTable {
  id: ColumnType<number, never, never>
  client_id: string
  /** scrypt hash of the client secret, which is shown once at creation. */
  secret_hash: string
  /** After a rotation: the hash of the secret it replaced, which keeps working until the time below. */
  previous_secret_hash: ColumnType<string | null, string | null | undefined, string | null>
  previous_secret_expires_at: ColumnType<Date | null, Date | null | undefined, Date | string | null>
  user_id: number
  created_at: Generated<Date>
  updated_at: Generated<Date>
}

export type ClientRow = Selectable<ClientsTable>
