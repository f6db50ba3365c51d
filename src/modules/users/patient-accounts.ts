import type { Db } from '../../../db/database.js'
import type {
  CreatedPatientAccount,
  PatientAccount,
  PatientAccountBody,
} from '../../../schemas/patient-accounts.js'
import type { Actor } from '../../access/organization-scope.js'
import { conflict, notFound } from '../../errors.js'
import { requirePatient } from '../patients/service.js'
import { emailTaken, findPatientAccount } from './queries.js'
import {
  type AccountSettings,
  createInvitedAccount,
  deactivateUser,
  duplicateEmail,
  managedByProvider,
} from './service.js'

/** A patient's own account holds PATIENT alone: it opens no /api route, and FHIR keeps it to its compartment. */
const PATIENT_ACCOUNT_ROLES = ['PATIENT']

const toPatientAccount = (row: { id: number; email: string; active: boolean; created_at: Date }) => ({
  id: row.id,
  email: row.email,
  active: row.active,
  createdAt: row.created_at.toISOString(),
})

const alreadyHasAccount = (patientId: number) =>
  conflict(
    `Patient ${patientId} already has an account (a deactivated one is reactivated by an administrator)`,
  )

const isDuplicatePatient = (error: unknown) => {
  const { code, constraint } = (error ?? {}) as { code?: string; constraint?: string }
  return code === '23505' && constraint === 'users_patient_idx'
}

/**
 * The account of the caller's organization's live patient `patientId`, invited as any person is
 * (inviteUser): by a mailed password link or a temporary password. It holds PATIENT only and is
 * linked to the record (users.patient_id), whose names it takes. 409 when the patient has an account
 * (active or not) or the address is taken; 403/404 for another organization's, a missing or a
 * deleted patient.
 */
export async function invitePatient(
  db: Db,
  actor: Actor,
  patientId: number,
  body: PatientAccountBody,
  settings: AccountSettings,
): Promise<CreatedPatientAccount> {
  if (settings.external) throw managedByProvider('Accounts cannot be created here')
  const patient = await requirePatient(db, actor, patientId)
  if (await findPatientAccount(db, actor.organizationId, patientId)) throw alreadyHasAccount(patientId)
  if (await emailTaken(db, body.email)) throw duplicateEmail()
  try {
    const { row, temporaryPassword } = await createInvitedAccount(db, body.invite, settings, {
      organizationId: actor.organizationId,
      email: body.email,
      firstName: patient.first_name,
      lastName: patient.last_name,
      roles: PATIENT_ACCOUNT_ROLES,
      patientId,
    })
    return { ...toPatientAccount(row), temporaryPassword }
  } catch (error) {
    // Another request invited the same patient between the check and the insert.
    throw isDuplicatePatient(error) ? alreadyHasAccount(patientId) : error
  }
}

/** The patient's account, or 404 when it has none; 403/404 for another organization's or a missing patient. */
async function requirePatientAccount(db: Db, actor: Actor, patientId: number) {
  const account = await findPatientAccount(db, actor.organizationId, patientId)
  if (account) return account
  // A deleted patient's account is still found above (to be deactivated); without one, the patient rule.
  await requirePatient(db, actor, patientId)
  throw notFound(`Account of patient ${patientId}`)
}

export async function getPatientAccount(db: Db, actor: Actor, patientId: number): Promise<PatientAccount> {
  return toPatientAccount(await requirePatientAccount(db, actor, patientId))
}

/**
 * Deactivates the patient's account as POST /api/users/{id}/deactivate does: its sessions end at
 * once, and its access tokens stop working within the account cache's interval.
 */
export async function deactivatePatientAccount(
  db: Db,
  actor: Actor,
  patientId: number,
): Promise<PatientAccount> {
  const account = await requirePatientAccount(db, actor, patientId)
  const user = await deactivateUser(db, actor, account.id)
  return toPatientAccount({ ...account, active: user.active })
}
