import type { ColumnType, Generated, Selectable } from 'kysely'

export interface OrganizationsTable {
  id: ColumnType<number, never, never>
  name: string
  group_path: string
  /** The practice's own (type 2) NPI. */
  npi: string | null
  phone_number: string | null
  email: string | null
  address_street: string | null
  address_city: string | null
  address_state: string | null
  address_postal_code: string | null
  address_country: string | null
  updated_by: number | null
  created_at: Generated<Date>
  updated_at: Generated<Date>
  /** Incremented by the database on every change of the row. */
  version: Generated<number>
}

export type OrganizationRow = Selectable<OrganizationsTable>
