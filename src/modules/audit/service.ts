import type { Kysely, Selectable } from 'kysely'
import type { Database } from '../../../db/database.js'
import type { AuditLogTable } from '../../../db/tables/audit-log.js'
import type { AuditEvent, AuditEventListQuery } from '../../../schemas/audit.js'
import type { PageOf } from '../../../schemas/common.js'
import type { Actor } from '../../access/organization-scope.js'
import { AppError } from '../../errors.js'
import { sortOrder, toPage } from '../../lib/paging.js'
import { listAuditRows } from './queries.js'

const SORT_COLUMNS = { occurredAt: 'occurred_at' } as const

function toAuditEvent(row: Selectable<AuditLogTable>): AuditEvent {
  return {
    id: Number(row.id),
    occurredAt: row.occurred_at.toISOString(),
    userId: row.user_id,
    action: row.action as AuditEvent['action'],
    resourceType: row.resource_type as AuditEvent['resourceType'],
    resourceIds: row.resource_ids,
    patientId: row.patient_id,
    outcome: row.outcome as AuditEvent['outcome'],
    statusCode: row.status_code,
    requestId: row.request_id,
  }
}

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
