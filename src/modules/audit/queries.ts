import { sql } from 'kysely'
import type { Db } from '../../../db/database.js'
import type { AuditEventListQuery } from '../../../schemas/audit.js'
import type { PageQuery } from '../../../schemas/common.js'
import { fetchPage, type ListFilters, type SortOrder } from '../../lib/paging.js'
import { type SyncRead, syncRows } from '../../lib/sync-paging.js'

type AuditFilters = ListFilters<AuditEventListQuery>

/** An organization's audit records matching the filters; records of no organization are never listed. */
export function filteredAuditRows(db: Db, organizationId: number, filters: AuditFilters) {
  let query = db.selectFrom('audit_log').selectAll().where('organization_id', '=', organizationId)
  const { patientId } = filters
  if (patientId !== undefined) {
    // Calls that named the patient, and patient calls that returned it (reads, lists, searches).
    query = query.where((eb) =>
      eb.or([
        eb('patient_id', '=', patientId),
        eb.and([
          eb('resource_type', '=', 'patient'),
          eb('resource_ids', '@>', sql<number[]>`array[${patientId}]::integer[]`),
        ]),
      ]),
    )
  }
  if (filters.userId !== undefined) query = query.where('user_id', '=', filters.userId)
  if (filters.action) query = query.where('action', '=', filters.action)
  if (filters.resourceType) query = query.where('resource_type', '=', filters.resourceType)
  if (filters.outcome) query = query.where('outcome', '=', filters.outcome)
  if (filters.from) query = query.where('occurred_at', '>=', new Date(filters.from))
  if (filters.to) query = query.where('occurred_at', '<', new Date(filters.to))
  return query
}

/** One page of an organization's audit records. */
export function listAuditRows(
  db: Db,
  organizationId: number,
  filters: AuditFilters,
  sort: SortOrder,
  paging: PageQuery,
) {
  const query = filteredAuditRows(db, organizationId, filters)
  const direction = sort.direction
  // The id breaks ties between records of the same instant, so pages never overlap.
  return fetchPage(db, query.orderBy('occurred_at', direction).orderBy('id', direction), paging)
}

/**
 * A sync page of an organization's audit records after the position. Audit records never change;
 * they are written after their calls began (in a batch, or in the transaction of the change they
 * record), so the time they were written (not the time of the call) and the id are the position.
 */
export async function syncAuditRows(db: Db, organizationId: number, filters: AuditFilters, read: SyncRead) {
  const rows = await syncRows(
    filteredAuditRows(db, organizationId, filters),
    { time: 'recorded_at', id: 'id' },
    read,
  )
  // bigint: a string from pg; the ids stay far below 2^53.
  return rows.map((row) => ({ ...row, id: Number(row.id) }))
}
