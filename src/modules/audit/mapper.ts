import type { Selectable } from 'kysely'
import type { AuditLogTable } from '../../../db/tables/audit-log.js'
import type { AuditEvent } from '../../../schemas/audit.js'

export function toAuditEvent(row: Selectable<AuditLogTable>): AuditEvent {
  return {
    id: Number(row.id),
    occurredAt: row.occurred_at.toISOString(),
    recordedAt: row.recorded_at.toISOString(),
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
