import { sql } from 'kysely'
import type { Db } from '../../../db/database.js'
import { hashToken } from '../../identity/sessions.js'

// What the authorization endpoint reads and writes besides codes: the user's standing grant to the
// app, and an EHR launch's context.

/** The scopes of the user's standing grant to the app, if there is one. */
export async function standingGrant(db: Db, userId: number, appId: number) {
  return db
    .selectFrom('app_grants')
    .select(['id', 'scopes'])
    .where('user_id', '=', userId)
    .where('app_id', '=', appId)
    .where('revoked_at', 'is', null)
    .executeTakeFirst()
}

/** An EHR launch's context: its patient and encounter. */
export interface LaunchedContext {
  patientId: number
  encounterId: number | undefined
}

const liveLaunch = (db: Db, launch: string, organizationId: number, appId: number) =>
  db
    .selectFrom('launch_contexts')
    .where('launch_hash', '=', hashToken(launch))
    .where('organization_id', '=', organizationId)
    .where((eb) => eb.or([eb('app_id', 'is', null), eb('app_id', '=', appId)]))
    .where('used_at', 'is', null)
    .where('expires_at', '>', sql<Date>`now()`)

/** The context of an unused, unexpired launch of the organization, for this app or any. */
export async function launchContextOf(
  db: Db,
  launch: string,
  organizationId: number,
  appId: number,
): Promise<LaunchedContext | undefined> {
  const row = await liveLaunch(db, launch, organizationId, appId)
    .select(['patient_id', 'encounter_id'])
    .executeTakeFirst()
  return row && { patientId: row.patient_id, encounterId: row.encounter_id ?? undefined }
}
