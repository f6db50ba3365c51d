import type { ColumnType, Insertable, Selectable } from 'kysely'

/** One interval of a provider's weekly working hours. */
export interface ProviderHoursTable {
  id: ColumnType<number, never, never>
  organization_id: number
  provider_id: number
  /** ISO weekday: 1 = Monday … 7 = Sunday. */
  weekday: number
  /** HH:MM:SS wall-clock time; end_time may be 24:00:00. */
  start_time: string
  end_time: string
}

export type ProviderHoursRow = Selectable<ProviderHoursTable>
export type NewProviderHoursRow = Insertable<ProviderHoursTable>
