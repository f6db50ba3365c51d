import type { Generated, Selectable } from 'kysely'

export interface SigningKeysTable {
  kid: string
  algorithm: string
  public_key: string
  private_key: string
  created_at: Generated<Date>
  retired_at: Date | null
}

export type SigningKeyRow = Selectable<SigningKeysTable>
