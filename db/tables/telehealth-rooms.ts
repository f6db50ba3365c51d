import type { ColumnType, Generated, Selectable } from 'kysely'

export interface TelehealthRoomsTable {
  id: ColumnType<number, never, never>
  organization_id: number
  /** Random, unguessable: it is the Jitsi room name, which anyone who knows it could try to join. */
  name: string
  appointment_id: number | null
  provider_id: number
  patient_id: number
  status: string
  created_by: number
  created_at: Generated<Date>
  updated_at: Generated<Date>
  closed_at: Date | null
  closed_by: number | null
}

export type TelehealthRoomRow = Selectable<TelehealthRoomsTable>
