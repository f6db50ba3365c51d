import type { ColumnType, Generated } from 'kysely'

/** Where a running export is: the type (by index in `types`), the last id written, the next file's number. */
export interface BulkExportPosition {
  typeIndex: number
  after: number
  sequence: number
}

/** FHIR Bulk Data export jobs. */
export interface BulkExportsTable {
  id: string
  organization_id: number
  requested_by: number
  level: 'system' | 'patient' | 'group'
  group_id: string | null
  types: string[]
  /** Search queries (`_typeFilter`) by resource type: a resource is exported if it matches any. */
  type_filters: ColumnType<Record<string, string>, string | undefined, string>
  since: Date | null
  request_url: string
  status: Generated<'accepted' | 'in-progress' | 'completed' | 'failed'>
  transaction_time: Date | null
  position: ColumnType<BulkExportPosition, string | undefined, string>
  exported: Generated<number>
  /** What the export leaves out and why (types the caller may not read), for its error file. */
  issues: ColumnType<string[], string[] | undefined, string[]>
  /** Why it failed, when it did. */
  error: string | null
  /** The worker running the export until `lease_until`, unless renewed; after a crash the lease lapses. */
  lease_owner: string | null
  lease_until: Date | null
  created_at: Generated<Date>
  completed_at: Date | null
  expires_at: Date
}

/** The NDJSON files of an export (an OperationOutcome file holds its errors). */
export interface BulkExportFilesTable {
  export_id: string
  organization_id: number
  sequence: number
  resource_type: string
  storage_key: string
  count: number
  size_bytes: number
}
