import type { Resource } from '@medplum/fhirtypes'
import type { Db } from '../../../db/database.js'
import type { PageQuery } from '../../../schemas/common.js'
import {
  type RecordVersion,
  recordVersion,
  recordVersions,
  tableVersions,
  type VersionedTable,
} from '../../lib/record-history.js'

/** One version of a record as a resource, as a `_history` lists it. */
export interface KeptResource<R extends Resource> {
  resource: R & { id: string }
  /** When the next version replaced it; null for the current version. */
  replacedAt: Date | null
  /** The version is the record's deletion: listed as a DELETE, without the resource. */
  deleted: boolean
}

/** The versions the database keeps of a type's records (src/lib/record-history.ts), as resources. */
export interface KeptVersions<R extends Resource> {
  /** A page of a record's versions, newest first, and how many there are. */
  page(
    db: Db,
    organizationId: number,
    id: number,
    page: PageQuery,
  ): Promise<{ versions: KeptResource<R>[]; total: number }>
  /** One version of a record, current or kept. */
  one(db: Db, organizationId: number, id: number, version: number): Promise<(R & { id: string }) | undefined>
  /** A page of the versions of all the organization's records of the type, newest change first. */
  all(
    db: Db,
    organizationId: number,
    filter: { since: Date | undefined; patient: number | undefined },
    page: PageQuery,
  ): Promise<{ versions: KeptResource<R>[]; total: number }>
}

/** How a table's versions are told apart: the column of their patient, and which ones are deletions. */
interface KeptVersionsOptions<T extends VersionedTable> {
  /** Its records' patient column; none: the records are in no patient's compartment. */
  patientColumn?: string
  /** Whether a version is the record's deletion (a patient's soft delete). */
  deleted?(row: RecordVersion<T>): boolean
  /** The records of the type, when the table holds others too (clinical records of its kinds). */
  only?: { column: string; values: readonly string[] }
}

/** The kept versions of the records of `table`, each mapped as the type maps its current row. */
export function keptVersions<T extends VersionedTable, R extends Resource>(
  table: T,
  toFhir: (row: RecordVersion<T>) => R & { id: string },
  options: KeptVersionsOptions<T> = {},
): KeptVersions<R> {
  const kept = (row: RecordVersion<T>): KeptResource<R> => ({
    resource: toFhir(row),
    replacedAt: row.replaced_at,
    deleted: options.deleted?.(row) ?? false,
  })
  return {
    async page(db, organizationId, id, page) {
      const { rows, total } = await recordVersions(db, organizationId, table, id, page)
      return { versions: rows.map(kept), total }
    },
    async all(db, organizationId, { since, patient }, page) {
      const { patientColumn } = options
      // A patient/ scope sees only its compartment: nothing of a type outside every compartment.
      if (patient !== undefined && !patientColumn) return { versions: [], total: 0 }
      const filter = {
        since,
        only: options.only,
        ...(patient === undefined || !patientColumn
          ? {}
          : { patient: { column: patientColumn, id: patient } }),
      }
      const { rows, total } = await tableVersions(db, organizationId, table, filter, page)
      return { versions: rows.map(kept), total }
    },
    async one(db, organizationId, id, version) {
      const row = await recordVersion(db, organizationId, table, id, version)
      return row && toFhir(row)
    },
  }
}
