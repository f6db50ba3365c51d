import type { Db } from '../../../db/database.js'
import type { FhirScopeRules } from '../../access/grantable-scopes.js'
import { authorityOf, hasAnyRole, type Role } from '../../access/roles.js'
import { ROUTE_ACCESS } from '../../access/route-access.js'
import { findPatientOfOrganization } from '../patients/service.js'
import { type AuthorizationRequest, RedirectedError } from './authorization-request.js'
import type { BrowserSession } from './browser-sessions.js'
import { grantableByUser } from './granted-scopes.js'
import { launchContextOf } from './launch-grants.js'

/** What the user and the request come to, once signed in: the scopes and patient context to grant. */
export interface Decision {
  request: AuthorizationRequest
  session: BrowserSession
  scopes: string[]
  patientId: number | undefined
  encounterId: number | undefined
  /** SMART's need_patient_banner: false when the EHR, which launched the app, shows the patient. */
  needPatientBanner: boolean
  /** Whether the patient is the one the user chose on the picker (it travels in the consent form). */
  picked: boolean
}

/** A standalone launch with launch/patient by a member of the practice, who has to choose the patient. */
export interface PatientToPick {
  pick: true
  request: AuthorizationRequest
  session: BrowserSession
}

/** The patient chosen is not a live patient of the user's organization (or not an id at all). */
export class UnchoosablePatient extends Error {
  constructor(readonly patientId: number | undefined) {
    super('The patient cannot be chosen')
  }
}

// The picker is a search of the practice's patients: it follows GET /api/patients/search's roles
// (none, should that rule ever stop being a list of roles).
const finders = ROUTE_ACCESS['GET /api/patients/search'].allow
const PATIENT_FINDERS: readonly Role[] = Array.isArray(finders) ? finders : []

/**
 * Whether an account may choose a launch patient: a role that finds patients, and not a patient's
 * account (whose tokens keep to its own record, so it has none to choose).
 */
const mayPickPatients = (authorities: ReadonlySet<string>) =>
  hasAnyRole(authorities, PATIENT_FINDERS) && !authorities.has(authorityOf('PATIENT'))

/** The user's account as far as granting goes: roles, organization, own patient record. */
const accountOf = (db: Db, userId: number) =>
  db
    .selectFrom('users')
    .select(['id', 'organization_id', 'roles', 'patient_id'])
    .where('id', '=', userId)
    .where('active', '=', true)
    .executeTakeFirst()

/**
 * What the signed-in user may grant the app, and the patient context: an EHR launch's, a patient's
 * own record, or for the practice's staff the patient `chosen` on the picker (PatientToPick until
 * then), checked here at every step. Throws RedirectedError, or UnchoosablePatient.
 */
export async function decide(
  db: Db,
  fhirScopes: FhirScopeRules,
  request: AuthorizationRequest,
  session: BrowserSession,
  chosen: number,
): Promise<Decision>
export async function decide(
  db: Db,
  fhirScopes: FhirScopeRules,
  request: AuthorizationRequest,
  session: BrowserSession,
  chosen?: number,
): Promise<Decision | PatientToPick>
export async function decide(
  db: Db,
  fhirScopes: FhirScopeRules,
  request: AuthorizationRequest,
  session: BrowserSession,
  chosen?: number,
): Promise<Decision | PatientToPick> {
  const back = (error: string, description: string) => new RedirectedError(request, error, description)
  const account = await accountOf(db, session.userId)
  if (!account || account.organization_id !== request.app.organization_id) {
    throw back('access_denied', 'The app is not registered with the practice of the account signed in')
  }
  const authorities = new Set(account.roles.map(authorityOf))
  const scopes = grantableByUser(request.scopes, authorities, fhirScopes)
  if (scopes.length === 0)
    throw back('invalid_scope', 'None of the scopes asked for may be granted to this user')
  const granted = { request, session, scopes, encounterId: undefined, picked: false }
  if (request.launch !== undefined) {
    const context = await launchContextOf(db, request.launch, account.organization_id, request.app.id)
    if (!context) throw back('invalid_request', 'The launch is unknown, used or expired')
    return { ...granted, ...context, needPatientBanner: false }
  }
  if (!scopes.includes('launch/patient')) {
    return { ...granted, patientId: undefined, needPatientBanner: true }
  }
  if (account.patient_id !== null) {
    return { ...granted, patientId: account.patient_id, needPatientBanner: true }
  }
  if (!mayPickPatients(authorities)) {
    throw back(
      'invalid_scope',
      'A standalone launch with launch/patient needs a patient account, or a role that finds patients',
    )
  }
  if (chosen === undefined) return { pick: true, request, session }
  if (!(await findPatientOfOrganization(db, account.organization_id, chosen))) {
    throw new UnchoosablePatient(chosen)
  }
  return { ...granted, patientId: chosen, needPatientBanner: true, picked: true }
}
