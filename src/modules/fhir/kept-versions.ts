import type { Resource } from '@medplum/fhirtypes'
import type { Db } from '../../../db/database.js'
import type { PageQuery } from '../../../schemas/common.js'
import {
  type RecordVersion,
  recordVersion,
  recordVersions,
  type VersionedTable,
} from '../../lib/record-history.js'

/** One version of a record as a resource, as an instance's `_history` lists it. */
export interface KeptResource<R extends Resource> {
  resource: R & { id: string }
  /** When the next version replaced it; null for the current version. */
  replacedAt: Date | null
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
}

/** The kept versions of the records of `table`, each mapped as the type maps its current row. */
export function keptVersions<T extends VersionedTable, R extends Resource>(
  table: T,
  toFhir: (row: RecordVersion<T>) => R & { id: string },
): KeptVersions<R> {
  return {
    async page(db, organizationId, id, page) {
      const { rows, total } = await recordVersions(db, organizationId, table, id, page)
      const versions = rows.map((row) => ({ resource: toFhir(row), replacedAt: row.replaced_at }))
      return { versions, total }
    },
    async one(db, organizationId, id, version) {
      const row = await recordVersion(db, organizationId, table, id, version)
      return row && toFhir(row)
    },
  }
}
