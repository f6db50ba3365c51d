import type { Db } from '../../../db/database.js'
import type { AuditEvent, AuditEventListQuery } from '../../../schemas/audit.js'
import type { Actor } from '../../access/organization-scope.js'
import { AppError } from '../../errors.js'
import { sortOrder, splitListQuery, toPage } from '../../lib/paging.js'
import type { RecordList } from '../../lib/row-list.js'
import { syncPage } from '../../lib/sync-paging.js'
import { toAuditEvent } from './mapper.js'
import { listAuditRows, syncAuditRows } from './queries.js'

const SORT_COLUMNS = { occurredAt: 'occurred_at' } as const

/**
 * The caller's organization's audit trail a list query asks for: newest first unless asked
 * otherwise; a sync page holds the records written after the position, oldest first.
 */
export function listAuditEvents(db: Db, actor: Actor, query: AuditEventListQuery): RecordList<AuditEvent> {
  const { paging, filters } = splitListQuery(query)
  if (filters.from && filters.to && Date.parse(filters.from) > Date.parse(filters.to)) {
    throw new AppError('VAL_001', 'from must not be later than to', {
      status: 400,
      message: 'Invalid request parameters',
    })
  }
  const sort = sortOrder(paging.sort, SORT_COLUMNS, { field: 'occurredAt', direction: 'desc' })
  return {
    async page() {
      const { rows, total } = await listAuditRows(db, actor.organizationId, filters, sort, paging)
      return toPage(rows.map(toAuditEvent), total, paging)
    },
    async changes(read) {
      const rows = await syncAuditRows(db, actor.organizationId, filters, read)
      return syncPage(rows, toAuditEvent, read)
    },
  }
}
