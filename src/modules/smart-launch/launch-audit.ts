import type { Db } from '../../../db/database.js'
import type { AuditAction, AuditResource } from '../../../schemas/audit.js'
import { outcomeOf } from '../../plugins/audit.js'

/** One step of an app's launch (a sign-in, a consent or denial, a code exchange), as an audit record. */
export interface LaunchEvent {
  organizationId: number | null
  userId: number | null
  action: AuditAction
  resourceType: AuditResource
  ids?: number[]
  patientId?: number | null
  /** The HTTP status the step answered with. */
  status: number
  requestId: string
}

/**
 * Writes the record at once, not batched: these steps are rare, and the record of a sign-in or a
 * grant must survive a crash as the grant does.
 */
export async function auditLaunchStep(db: Db, event: LaunchEvent): Promise<void> {
  await db
    .insertInto('audit_log')
    .values({
      occurred_at: new Date(),
      organization_id: event.organizationId,
      user_id: event.userId,
      action: event.action,
      resource_type: event.resourceType,
      resource_ids: event.ids ?? [],
      patient_id: event.patientId ?? null,
      outcome: outcomeOf(event.status),
      status_code: event.status,
      request_id: event.requestId,
    })
    .execute()
}
