import type { ColumnType, Generated, Selectable } from 'kysely'

export interface OrganizationsTable {
  id: ColumnType<number, never, never>
  name: string
  group_path: string
  created_at: Generated<Date>
  updated_at: Generated<Date>
  /** Incremented by the database on every change of the row. */
  version: Generated<number>
}

export type OrganizationRow = Selectable<OrganizationsTable>
