import type { Kysely } from 'kysely'
import type { Database } from '../../../db/database.js'
import type { AuditEvent, AuditEventListQuery } from '../../../schemas/audit.js'
import type { PageOf } from '../../../schemas/common.js'
import type { Actor } from '../../access/organization-scope.js'
import { AppError } from '../../errors.js'
import { sortOrder, toPage } from '../../lib/paging.js'
import { toAuditEvent } from './mapper.js'
import { listAuditRows } from './queries.js'

const SORT_COLUMNS = { occurredAt: 'occurred_at' } as const

/** The caller's organization's audit trail, newest first unless asked otherwise. */
export async function listAuditEvents(
  db: Kysely<Database>,
  actor: Actor,
  query: AuditEventListQuery,
): Promise<PageOf<AuditEvent>> {
  const { page, size, sort, ...filters } = query
  if (filters.from && filters.to && Date.parse(filters.from) > Date.parse(filters.to)) {
    throw new AppError('VAL_001', 'from must not be later than to', {
      status: 400,
      message: 'Invalid request parameters',
    })
  }
  const paging = { page, size }
  const order = sortOrder(sort, SORT_COLUMNS, { field: 'occurredAt', direction: 'desc' })
  const { rows, total } = await listAuditRows(db, actor.organizationId, filters, order, paging)
  return toPage(rows.map(toAuditEvent), total, paging)
}
