import { type Kysely, sql } from 'kysely'
import type { Database } from '../../../db/database.js'
import type { PageQuery } from '../../../schemas/common.js'
import { fetchPage, type SortOrder } from '../../lib/paging.js'

export interface AuditFilters {
  patientId?: number
  userId?: number
  action?: string
  resourceType?: string
  outcome?: string
  from?: string
  to?: string
}

/** One page of an organization's audit records; records of no organization are never listed. */
export function listAuditRows(
  db: Kysely<Database>,
  organizationId: number,
  filters: AuditFilters,
  sort: SortOrder,
  paging: PageQuery,
) {
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
  const direction = sort.direction
  // The id breaks ties between records of the same instant, so pages never overlap.
  return fetchPage(db, query.orderBy('occurred_at', direction).orderBy('id', direction), paging)
}
