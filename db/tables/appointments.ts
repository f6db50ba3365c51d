import type { ColumnType, Generated, Selectable } from 'kysely'

export interface AppointmentsTable {
  id: ColumnType<number, never, never>
  organization_id: number
  patient_id: number
  provider_id: number
  /** The wall-clock date and time as booked, in `time_zone`; `starts_at` is the same moment. */
  appointment_date: string
  appointment_time: string
  time_zone: string
  starts_at: Date
  ends_at: Date
  duration_minutes: number
  appointment_type: string
  priority: string
  reason: string | null
  notes: string | null
  status: Generated<string>
  cancellation_reason: string | null
  cancelled_at: Date | null
  cancelled_by: number | null
  created_by: number | null
  updated_by: number | null
  created_at: Generated<Date>
  updated_at: Generated<Date>
  /** Incremented by the database on every change of the row. */
  version: Generated<number>
}

export type AppointmentRow = Selectable<AppointmentsTable>
