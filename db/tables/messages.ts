import type { ColumnType, Generated, Selectable } from 'kysely'

export interface MessagesTable {
  id: ColumnType<number, never, never>
  organization_id: number
  sender_id: number
  recipient_id: number
  patient_id: number | null
  /** The first message of the conversation; null for a first message itself. */
  thread_id: number | null
  reply_to_id: number | null
  subject: string
  body: string
  read_at: Date | null
  created_at: Generated<Date>
  updated_at: Generated<Date>
  /** Incremented by the database on every change of the row. */
  version: Generated<number>
}

export type MessageRow = Selectable<MessagesTable>
