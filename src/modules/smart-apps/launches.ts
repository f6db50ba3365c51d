import type { Db, Trx } from '../../../db/database.js'
import type { CreateSmartLaunchBody, SmartLaunch } from '../../../schemas/smart-apps.js'
import { type Actor, missingRecord } from '../../access/organization-scope.js'
import { auditChange } from '../../audit/change-audit.js'
import { invalidField } from '../../errors.js'
import { hashToken, newOpaqueToken } from '../../identity/sessions.js'
import { checkEncounterOfPatient } from '../encounters/service.js'
import { findPatientOfOrganization, requirePatient } from '../patients/service.js'
import { appOwnerOrganization, findApp, insertLaunch, useLaunch } from './queries.js'

// SMART App Launch: the launch value is short-lived and single use. Five minutes covers opening the
// app and its redirect to the authorization endpoint, and little more.
const LAUNCH_SECONDS = 5 * 60

export interface LaunchSettings {
  /** The FHIR base URL (`$PUBLIC_URL/fhir/R4`): the `iss` an app is opened with. */
  fhirBase: string
}

/** The app's launch URL with the launch's `iss` and `launch` (SMART EHR launch). */
function launchUrlOf(url: string, fhirBase: string, launch: string): string {
  const opened = new URL(url)
  opened.searchParams.set('iss', fhirBase)
  opened.searchParams.set('launch', launch)
  return opened.toString()
}

/**
 * An EHR launch: the context (a patient of the organization, optionally one of their encounters)
 * that an app opened from the EHR receives, redeemed once by its opaque value within five minutes.
 * Only the value's SHA-256 is stored; the value itself is in the answer alone.
 */
export async function createLaunch(
  db: Db,
  actor: Actor,
  body: CreateSmartLaunchBody,
  settings: LaunchSettings,
): Promise<SmartLaunch> {
  await requirePatient(db, actor, body.patientId)
  if (body.encounterId !== undefined) {
    await checkEncounterOfPatient(db, actor.organizationId, body.patientId, body.encounterId)
  }
  let launchUrl: string | null = null
  const launch = newOpaqueToken()
  if (body.appId !== undefined) {
    const app =
      (await findApp(db, actor.organizationId, body.appId)) ??
      missingRecord('SMART app', body.appId, await appOwnerOrganization(db, body.appId), actor)
    if (app.disabled_at !== null) throw invalidField('appId', 'is a deactivated app')
    if (app.launch_url !== null) launchUrl = launchUrlOf(app.launch_url, settings.fhirBase, launch)
  }
  const expiresAt = await db.transaction().execute(async (trx) => {
    const expiresAt = await insertLaunch(trx, {
      launch_hash: hashToken(launch),
      organization_id: actor.organizationId,
      created_by: actor.userId,
      app_id: body.appId ?? null,
      patient_id: body.patientId,
      encounter_id: body.encounterId ?? null,
      seconds: LAUNCH_SECONDS,
    })
    // A launch has no numeric id: its record names the patient (from the body) and no record id.
    await auditChange(trx, [])
    return expiresAt
  })
  return { launch, expiresAt: expiresAt.toISOString(), launchUrl }
}

/**
 * The context of a launch the app presents at the authorization endpoint, marked used: undefined
 * for an unknown, expired or used launch, one of another organization, one made for another app,
 * or one whose patient has since been deleted. Single use, also under concurrent redemptions.
 */
export async function redeemLaunch(
  trx: Trx,
  launch: string,
  { organizationId, appId }: { organizationId: number; appId: number },
): Promise<{ patientId: number; encounterId: number | null } | undefined> {
  const context = await useLaunch(trx, hashToken(launch), organizationId, appId)
  if (!context) return undefined
  if (!(await findPatientOfOrganization(trx, organizationId, context.patient_id))) return undefined
  return { patientId: context.patient_id, encounterId: context.encounter_id }
}
