import type { ColumnType, Generated, Selectable } from 'kysely'

export interface DocumentsTable {
  id: ColumnType<number, never, never>
  organization_id: number
  patient_id: number
  encounter_id: number | null
  title: string
  category: string
  /** The verified content type (declared by the client and matched against the file's first bytes). */
  content_type: string
  /** A display name only: never used as a path. */
  file_name: string
  size_bytes: number | null
  sha256: string | null
  /** Random key of the bytes in the document store. */
  storage_key: string
  /** PENDING while the bytes are written, AVAILABLE, or DELETED (bytes kept until purged). */
  status: Generated<string>
  uploaded_by: number
  created_at: Generated<Date>
  updated_at: Generated<Date>
  /** Incremented by the database on every change of the row. */
  version: Generated<number>
  deleted_at: Date | null
  deleted_by: number | null
  purged_at: Date | null
}

export type DocumentRow = Selectable<DocumentsTable>
