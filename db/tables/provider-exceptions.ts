import type { ColumnType, Generated, Insertable, Selectable } from 'kysely'

/** A dated change to a provider's weekly hours: time off, or extra hours. */
export interface ProviderExceptionsTable {
  id: ColumnType<number, never, never>
  organization_id: number
  provider_id: number
  /** YYYY-MM-DD, kept as text like every date column. */
  date: string
  kind: string
  /** Both null: the whole day (TIME_OFF only). */
  start_time: string | null
  end_time: string | null
  reason: string | null
  created_by: number | null
  created_at: Generated<Date>
}

export type ProviderExceptionRow = Selectable<ProviderExceptionsTable>
export type NewProviderExceptionRow = Insertable<ProviderExceptionsTable>
