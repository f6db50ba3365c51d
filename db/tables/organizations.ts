import type { ColumnType, Generated } from 'kysely'

export interface OrganizationsTable {
  id: ColumnType<number, never, never>
  name: string
  group_path: string
  created_at: Generated<Date>
  updated_at: Generated<Date>
}
