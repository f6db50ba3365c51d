import type { ColumnType, Generated } from 'kysely'

/** A JSON Web Key Set of public keys, as registered (checked at registration: public members only). */
export interface StoredJwks {
  keys: Record<string, unknown>[]
}

/** Confidential OAuth clients for server-to-server integrations; each acts as its service-account user. */
export interface ClientsTable {
  id: ColumnType<number, never, never>
  client_id: string
  /** scrypt hash of the client secret, which is shown once at creation. */
  secret_hash: string
  /**
   * Whether the secret authenticates the client: false for a client registered with keys, which
   * authenticates with them only (private_key_jwt), until a rotation gives it a secret.
   */
  secret_enabled: ColumnType<boolean, boolean | undefined, boolean>
  /** After a rotation: the hash of the secret it replaced, which keeps working until the time below. */
  previous_secret_hash: ColumnType<string | null, string | null | undefined, string | null>
  previous_secret_expires_at: ColumnType<Date | null, Date | null | undefined, Date | string | null>
  /** Public keys that verify the client's assertions (RFC 7523), or null; never with jwks_url. */
  jwks: ColumnType<StoredJwks | null, string | null | undefined, string | null>
  /** Where the client publishes its public keys (fetched, cached), or null; never with jwks. */
  jwks_url: ColumnType<string | null, string | null | undefined, string | null>
  user_id: number
  created_at: Generated<Date>
  updated_at: Generated<Date>
}
