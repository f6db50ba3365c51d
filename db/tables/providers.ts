import type { ColumnType, Generated, Selectable } from 'kysely'

export interface ProvidersTable {
  id: ColumnType<number, never, never>
  organization_id: number
  /** The user account of this provider, when they sign in. */
  user_id: number | null
  first_name: string
  last_name: string
  title: string | null
  specialty: string | null
  npi: string
  email: string | null
  phone_number: string | null
  active: Generated<boolean>
  /** IANA name; the provider's hours and appointment times are wall-clock times in this zone. */
  time_zone: string
  slot_minutes: number
  created_by: number | null
  updated_by: number | null
  created_at: Generated<Date>
  updated_at: Generated<Date>
  /** Incremented by the database on every change of the row. */
  version: Generated<number>
}

export type ProviderRow = Selectable<ProvidersTable>
