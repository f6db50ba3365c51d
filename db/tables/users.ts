import type { ColumnType, Generated, Selectable } from 'kysely'

export interface UsersTable {
  id: ColumnType<number, never, never>
  organization_id: number
  /** The token `sub` of this user: a UUID for accounts of the embedded issuer, the provider's id otherwise. */
  subject: string
  email: string
  /** scrypt hash; null for accounts that sign in only through an external provider. */
  password_hash: string | null
  first_name: string
  last_name: string
  roles: string[]
  active: Generated<boolean>
  /** Set for accounts given a temporary password: they must choose their own before signing in. */
  password_change_required: Generated<boolean>
  /** PERSON, or SERVICE for the account behind a confidential client. */
  kind: Generated<string>
  /** A PATIENT account's patient record (its only one); null for every other account. */
  patient_id: ColumnType<number | null, number | null | undefined, number | null>
  created_at: Generated<Date>
  updated_at: Generated<Date>
}

export type UserRow = Selectable<UsersTable>
