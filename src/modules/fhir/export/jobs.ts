import { type Selectable, sql } from 'kysely'
import { acrossOrganizations } from '../../../../db/across-organizations.js'
import type { Database, Db, Trx } from '../../../../db/database.js'
import { leaseFree, leaseUntil, takeLease } from '../../../../db/leases.js'
import type { BulkExportPosition } from '../../../../db/tables/bulk-exports.js'
import { inOrganization } from '../../../lib/organization-records.js'

export type ExportJob = NonNullable<Awaited<ReturnType<typeof claimExport>>>

export interface NewExport {
  id: string
  organizationId: number
  requestedBy: number
  level: 'system' | 'patient' | 'group'
  groupId: string | null
  types: string[]
  typeFilters: Record<string, string>
  since: Date | null
  requestUrl: string
  issues: string[]
  expiresAt: Date
}

export async function insertExport(db: Db, job: NewExport): Promise<void> {
  await db
    .insertInto('bulk_exports')
    .values({
      id: job.id,
      organization_id: job.organizationId,
      requested_by: job.requestedBy,
      level: job.level,
      group_id: job.groupId,
      types: job.types,
      type_filters: JSON.stringify(job.typeFilters),
      since: job.since,
      request_url: job.requestUrl,
      issues: job.issues,
      expires_at: job.expiresAt,
    })
    .execute()
}

/** An export of the caller's (organization and requester), unless it has expired. */
export function findExport(db: Db, organizationId: number, requestedBy: number, id: string) {
  return inOrganization(db, organizationId)
    .selectFrom('bulk_exports')
    .selectAll()
    .where('requested_by', '=', requestedBy)
    .where('id', '=', id)
    .where('expires_at', '>', sql<Date>`now()`)
    .executeTakeFirst()
}

export function exportFiles(db: Db, organizationId: number, exportId: string) {
  return inOrganization(db, organizationId)
    .selectFrom('bulk_export_files')
    .selectAll()
    .where('export_id', '=', exportId)
    .orderBy('sequence')
    .execute()
}

/** Removes an export and its file rows; returns the keys of its stored files. */
export async function deleteExport(trx: Trx, organizationId: number, id: string): Promise<string[]> {
  const organization = inOrganization(trx, organizationId)
  const files = await organization
    .selectFrom('bulk_export_files')
    .select('storage_key')
    .where('export_id', '=', id)
    .execute()
  await organization.deleteFrom('bulk_exports').where('id', '=', id).execute()
  return files.map((file) => file.storage_key)
}

/**
 * Claims the oldest export that is waiting, or running under a lapsed lease (its instance stopped,
 * or is too slow to renew it), under a lease of `leaseSeconds` (db/leases.ts), while its
 * organization has fewer than `perOrganization` exports running under live leases. `running`: the
 * exports the claiming worker is running now, which it never takes a second time, lapsed lease or
 * not; another worker may.
 */
export async function claimExport(
  db: Db,
  leaseOwner: string,
  leaseSeconds: number,
  perOrganization: number,
  running: readonly string[],
) {
  const result = await sql<Selectable<Database['bulk_exports']>>`${acrossOrganizations('bulk export worker')}
    update bulk_exports set status = 'in-progress', ${takeLease('bulk_exports', leaseOwner, leaseSeconds)}
    where id = (
      select j.id from bulk_exports j
      where j.status in ('accepted', 'in-progress')
        and ${leaseFree('bulk_exports', 'j')}
        and j.id <> all(${[...running]}::uuid[])
        and j.expires_at > now()
        and (select count(*) from bulk_exports r
             where r.organization_id = j.organization_id and r.status = 'in-progress'
               and r.lease_until >= now()) < ${perOrganization}
      order by j.created_at
      limit 1
      for update skip locked
    )
    returning *`.execute(db)
  const [row] = result.rows
  if (!row) return undefined
  return {
    ...row,
    position: row.position as BulkExportPosition,
    type_filters: row.type_filters as Record<string, string>,
  }
}

/**
 * An update of an export that runs under this owner's lease; it changes nothing once the export is
 * no longer this owner's (cancelled, taken over).
 */
const ownRunningExport = (db: Db, job: { id: string; leaseOwner: string }) =>
  db
    .updateTable('bulk_exports')
    .where('id', '=', job.id)
    .where('lease_owner', '=', job.leaseOwner)
    .where('status', '=', 'in-progress')
    .modifyEnd(acrossOrganizations('bulk export worker'))

/** Renews the lease of a running export; false when it is no longer this owner's. */
export async function renewLease(
  db: Db,
  job: { id: string; leaseOwner: string; leaseSeconds: number },
): Promise<boolean> {
  const result = await ownRunningExport(db, job)
    .set({ lease_until: leaseUntil(job.leaseSeconds) })
    .executeTakeFirst()
  return result.numUpdatedRows > 0n
}

export async function setTransactionTime(
  db: Db,
  job: { id: string; leaseOwner: string },
  at: Date,
): Promise<boolean> {
  const result = await ownRunningExport(db, job).set({ transaction_time: at }).executeTakeFirst()
  return result.numUpdatedRows > 0n
}

/**
 * Records a finished file (if it holds any resource) and moves the export to `next`, together, and
 * only while the export is still this owner's; false otherwise (the file is then not the export's).
 * The lease is renewed with it: a file is progress, however few pages it took.
 */
export async function recordFile(
  db: Db,
  job: { id: string; leaseOwner: string; leaseSeconds: number },
  file: { sequence: number; type: string; key: string; count: number; size: number } | undefined,
  next: BulkExportPosition,
): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    const moved = await ownRunningExport(trx, job)
      .set({
        position: JSON.stringify(next),
        exported: sql<number>`exported + ${file?.type === 'OperationOutcome' ? 0 : (file?.count ?? 0)}`,
        lease_until: leaseUntil(job.leaseSeconds),
      })
      .returning('organization_id')
      .executeTakeFirst()
    if (!moved) return false
    if (file) {
      await trx
        .insertInto('bulk_export_files')
        .values({
          export_id: job.id,
          organization_id: moved.organization_id,
          sequence: file.sequence,
          resource_type: file.type,
          storage_key: file.key,
          count: file.count,
          size_bytes: file.size,
        })
        .execute()
    }
    return true
  })
}

export async function finishExport(
  db: Db,
  job: { id: string; leaseOwner: string },
  outcome: { status: 'completed' | 'failed'; error?: string; retentionHours: number },
): Promise<void> {
  await db
    .updateTable('bulk_exports')
    .set({
      status: outcome.status,
      error: outcome.error ?? null,
      completed_at: sql<Date>`now()`,
      expires_at: sql<Date>`now() + make_interval(secs => ${outcome.retentionHours * 3600})`,
      lease_owner: null,
      lease_until: null,
    })
    .where('id', '=', job.id)
    .where('lease_owner', '=', job.leaseOwner)
    .modifyEnd(acrossOrganizations('bulk export worker'))
    .execute()
}

/** Up to `limit` expired exports. */
export function expiredExports(db: Db, limit: number) {
  return db
    .selectFrom('bulk_exports')
    .select(['id', 'organization_id'])
    .where('expires_at', '<=', sql<Date>`now()`)
    .orderBy('expires_at')
    .limit(limit)
    .modifyEnd(acrossOrganizations('housekeeping'))
    .execute()
}
