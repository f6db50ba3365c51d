import type { Trx } from '../../db/database.js'
import { revokeUserSessions } from './sessions.js'

/**
 * Deactivates the patient's own accounts and ends their sessions, with the deletion of the patient
 * they stand for: an account of a deleted patient record signs in to nothing and must not linger.
 */
export async function deactivatePatientAccounts(
  trx: Trx,
  organizationId: number,
  patientId: number,
): Promise<void> {
  const accounts = await trx
    .updateTable('users')
    .set({ active: false })
    .where('organization_id', '=', organizationId)
    .where('patient_id', '=', patientId)
    .returning('id')
    .execute()
  for (const { id } of accounts) await revokeUserSessions(trx, id, 'PATIENT_DELETED')
}
