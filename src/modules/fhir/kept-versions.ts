import type { Resource } from '@medplum/fhirtypes'
import type { Db } from '../../../db/database.js'
import type { PageQuery } from '../../../schemas/common.js'
import {
  type RecordVersion,
  recordVersion,
  recordVersions,
  tableVersions,
  type VersionedTable,
  type VersionSelection,
} from '../../lib/record-history.js'

/** One version of a record as a resource, as a `_history` lists it. */
export interface KeptResource<R extends Resource> {
  resource: R & { id: string }
  /** When the next version replaced it; null for the current version. */
  replacedAt: Date | null
  /** The version is the record's deletion: listed as a DELETE, without the resource. */
  deleted: boolean
  /** The version is the record's first one shown: listed as its create. */
  created: boolean
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
  one(db: Db, organizationId: number, id: number, version: number): Promise<KeptResource<R> | undefined>
  /** A page of the versions of all the organization's records of the type, newest change first. */
  all(
    db: Db,
    organizationId: number,
    filter: { since: Date | undefined; patient: number | undefined },
    page: PageQuery,
  ): Promise<{ versions: KeptResource<R>[]; total: number }>
}

/** How a table's versions are told apart, which are shown, and what their resources need besides. */
interface KeptVersionsOptions<T extends VersionedTable, C> {
  /** Its records' patient column; none: the records are in no patient's compartment. */
  patientColumn?: string
  /** Whether a version is the record's deletion (a patient's soft delete). */
  deleted?(row: RecordVersion<T>): boolean
  /** Whether a version is the record's creation; by default its version 1. */
  created?(row: RecordVersion<T>): boolean
  /** The versions shown (of clinical records, those of the type's kinds); by default all. */
  shown?: VersionSelection
  /** What the resources of a page of versions need from other tables, read once for the page. */
  context?(db: Db, organizationId: number, rows: RecordVersion<T>[]): Promise<C>
}

/** The kept versions of the records of `table`, each mapped as the type maps its current row. */
export function keptVersions<T extends VersionedTable, R extends Resource, C = undefined>(
  table: T,
  toFhir: (row: RecordVersion<T>, context: C) => R & { id: string },
  options: KeptVersionsOptions<T, C> = {},
): KeptVersions<R> {
  const { shown } = options
  const resources = async (db: Db, organizationId: number, rows: RecordVersion<T>[]) => {
    const context = (await options.context?.(db, organizationId, rows)) as C
    return rows.map((row): KeptResource<R> => {
      const resource = toFhir(row, context)
      return {
        resource,
        replacedAt: row.replaced_at,
        deleted: options.deleted?.(row) ?? false,
        created: options.created?.(row) ?? resource.meta?.versionId === '1',
      }
    })
  }
  return {
    async page(db, organizationId, id, page) {
      const { rows, total } = await recordVersions(db, organizationId, table, id, page, { shown })
      return { versions: await resources(db, organizationId, rows), total }
    },
    async all(db, organizationId, { since, patient }, page) {
      const { patientColumn } = options
      // A patient/ scope sees only its compartment: nothing of a type outside every compartment.
      if (patient !== undefined && !patientColumn) return { versions: [], total: 0 }
      const filter = {
        since,
        shown,
        ...(patient === undefined || !patientColumn
          ? {}
          : { patient: { column: patientColumn, id: patient } }),
      }
      const { rows, total } = await tableVersions(db, organizationId, table, filter, page)
      return { versions: await resources(db, organizationId, rows), total }
    },
    async one(db, organizationId, id, version) {
      const row = await recordVersion(db, organizationId, table, id, version, shown)
      return row && (await resources(db, organizationId, [row]))[0]
    },
  }
}
