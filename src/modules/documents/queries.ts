import { sql } from 'kysely'
import { acrossOrganizations } from '../../../db/across-organizations.js'
import type { Db } from '../../../db/database.js'
import type { DocumentRow } from '../../../db/tables/documents.js'
import type { DocumentListQuery } from '../../../schemas/documents.js'
import { inOrganization, organizationRecords } from '../../lib/organization-records.js'
import type { ListFilters } from '../../lib/paging.js'
import { rowList } from '../../lib/row-list.js'

export const DOCUMENT_SORT_COLUMNS = { createdAt: 'created_at', title: 'lower(title)' }

export function insertPendingDocument(
  db: Db,
  row: Pick<
    DocumentRow,
    | 'organization_id'
    | 'patient_id'
    | 'encounter_id'
    | 'title'
    | 'category'
    | 'content_type'
    | 'file_name'
    | 'storage_key'
    | 'uploaded_by'
  >,
) {
  return db
    .insertInto('documents')
    .values({ ...row, size_bytes: null, sha256: null, deleted_at: null, deleted_by: null, purged_at: null })
    .returning('id')
    .executeTakeFirstOrThrow()
}

export function markAvailable(db: Db, organizationId: number, id: number, size: number, sha256: string) {
  return inOrganization(db, organizationId)
    .updateTable('documents')
    .set({ status: 'AVAILABLE', size_bytes: size, sha256 })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow()
}

/** Removes the row of an upload that failed before its bytes were stored. */
export function deletePendingDocument(db: Db, organizationId: number, id: number) {
  return inOrganization(db, organizationId)
    .deleteFrom('documents')
    .where('id', '=', id)
    .where('status', '=', 'PENDING')
    .execute()
}

/** Documents by id; `delete` removes the row of an upload that failed after its bytes were stored. */
export const documentRecords = organizationRecords('documents')

export function findAvailableDocument(db: Db, organizationId: number, id: number) {
  return inOrganization(db, organizationId)
    .selectFrom('documents')
    .selectAll()
    .where('id', '=', id)
    .where('status', '=', 'AVAILABLE')
    .executeTakeFirst()
}

/**
 * A patient's listed documents: stored (AVAILABLE) ones only, matching the filters; sync pages
 * carry tombstones of deleted ones.
 */
export function patientDocumentRows(
  db: Db,
  organizationId: number,
  patientId: number,
  filters: ListFilters<DocumentListQuery>,
) {
  let query = inOrganization(db, organizationId)
    .selectFrom('documents')
    .selectAll()
    .where('patient_id', '=', patientId)
    .where('status', '=', 'AVAILABLE')
    // Implied by AVAILABLE; stated so the planner can use the partial sync index.
    .where('deleted_at', 'is', null)
  if (filters.category) query = query.where('category', '=', filters.category)
  return rowList(db, query, { tombstones: { organizationId, resourceType: 'document', patientId } })
}

/**
 * Marks a stored document deleted; with `expectedVersion`, only while it is still at that version:
 * check and write in one statement. The database raises the version.
 */
export function markDeleted(
  db: Db,
  organizationId: number,
  id: number,
  userId: number,
  expectedVersion?: number,
) {
  let query = inOrganization(db, organizationId)
    .updateTable('documents')
    .set({ status: 'DELETED', deleted_at: sql`now()`, deleted_by: userId })
    .where('id', '=', id)
    .where('status', '=', 'AVAILABLE')
  if (expectedVersion !== undefined) query = query.where('version', '=', expectedVersion)
  return query.returning(['id', 'storage_key']).executeTakeFirst()
}

/**
 * Uploads that never finished (a crash between row and bytes) and deleted documents past retention.
 * Housekeeping, over all organizations by design.
 */
export function findSweepable(db: Db, pendingBefore: Date, deletedBefore: Date, limit: number) {
  return db
    .selectFrom('documents')
    .select(['id', 'status', 'storage_key'])
    .where('purged_at', 'is', null)
    .where((eb) =>
      eb.or([
        eb.and([eb('status', '=', 'PENDING'), eb('updated_at', '<', pendingBefore)]),
        eb.and([eb('status', '=', 'DELETED'), eb('deleted_at', '<', deletedBefore)]),
      ]),
    )
    .orderBy('id')
    .limit(limit)
    .modifyEnd(acrossOrganizations('housekeeping'))
    .execute()
}

/** Housekeeping, over all organizations: removes the row of an abandoned upload the sweep found. */
export function deleteAbandonedUpload(db: Db, id: number) {
  return db
    .deleteFrom('documents')
    .where('id', '=', id)
    .modifyEnd(acrossOrganizations('housekeeping'))
    .execute()
}

/** Housekeeping, over all organizations: records that the sweep removed a document's bytes. */
export function markSweptPurged(db: Db, id: number) {
  return db
    .updateTable('documents')
    .set({ purged_at: sql`now()` })
    .where('id', '=', id)
    .modifyEnd(acrossOrganizations('housekeeping'))
    .execute()
}

export function markPurged(db: Db, organizationId: number, id: number) {
  return inOrganization(db, organizationId)
    .updateTable('documents')
    .set({ purged_at: sql`now()` })
    .where('id', '=', id)
    .execute()
}
