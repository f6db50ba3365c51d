import type { Kysely } from 'kysely'
import type { Database } from '../../../db/database.js'
import type { AuditEvent, AuditEventListQuery } from '../../../schemas/audit.js'
import type { PageOf } from '../../../schemas/common.js'
import type { Actor } from '../../access/organization-scope.js'
import { AppError } from '../../errors.js'
import { sortOrder, splitListQuery, toPage } from '../../lib/paging.js'
import { type SyncRead, type SyncResult, syncPage } from '../../lib/sync-paging.js'
import { toAuditEvent } from './mapper.js'
import { type AuditFilters, listAuditRows, syncAuditRows } from './queries.js'

const SORT_COLUMNS = { occurredAt: 'occurred_at' } as const

/** The list's filters (the query without paging and sync parameters), checked. */
function filtersOf(query: AuditEventListQuery): AuditFilters {
  const { filters } = splitListQuery(query)
  if (filters.from && filters.to && Date.parse(filters.from) > Date.parse(filters.to)) {
    throw new AppError('VAL_001', 'from must not be later than to', {
      status: 400,
      message: 'Invalid request parameters',
    })
  }
  return filters
}

/** The caller's organization's audit trail, newest first unless asked otherwise. */
export async function listAuditEvents(
  db: Kysely<Database>,
  actor: Actor,
  query: AuditEventListQuery,
): Promise<PageOf<AuditEvent>> {
  const { paging } = splitListQuery(query)
  const filters = filtersOf(query)
  const order = sortOrder(paging.sort, SORT_COLUMNS, { field: 'occurredAt', direction: 'desc' })
  const { rows, total } = await listAuditRows(db, actor.organizationId, filters, order, paging)
  return toPage(rows.map(toAuditEvent), total, paging)
}

/** A sync page of the organization's audit trail: records after the position, oldest first. */
export async function syncAuditEvents(
  db: Kysely<Database>,
  actor: Actor,
  query: AuditEventListQuery,
  read: SyncRead,
): Promise<SyncResult<AuditEvent>> {
  const rows = await syncAuditRows(db, actor.organizationId, filtersOf(query), read)
  return syncPage(rows, toAuditEvent, read) as SyncResult<AuditEvent>
}
