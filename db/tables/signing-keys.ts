import type { Generated } from 'kysely'

export interface SigningKeysTable {
  kid: string
  algorithm: string
  public_key: string
  /** Only a key written by a version before migration 0021: the service seals it at its next start. */
  private_key: string | null
  /** The PKCS#8 PEM private key, sealed with ENCRYPTION_KEY (src/identity/signing-keys.ts). */
  private_key_sealed: string | null
  created_at: Generated<Date>
  retired_at: Date | null
}
