import type { Db } from '../../db/database.js'

/** Accounts with their organization, whose group path a token names. */
const accountsWithOrganization = (db: Db) =>
  db.selectFrom('users').innerJoin('organizations', 'organizations.id', 'users.organization_id')

/** What tokens and sign-ins say of an account: who it is, its roles, its organization's group. */
const PROFILE_COLUMNS = [
  'users.email',
  'users.first_name',
  'users.last_name',
  'users.roles',
  'organizations.group_path',
] as const

export function findLoginCandidate(db: Db, email: string) {
  return accountsWithOrganization(db)
    .select([
      ...PROFILE_COLUMNS,
      'users.id',
      'users.subject',
      'users.password_hash',
      'users.organization_id',
      'users.password_change_required',
    ])
    .where((eb) => eb(eb.fn('lower', ['users.email']), '=', email.toLowerCase()))
    .where('users.kind', '=', 'PERSON')
    .where('users.active', '=', true)
    .executeTakeFirst()
}

export function findAccountBySubject(db: Db, subject: string) {
  return accountsWithOrganization(db)
    .select([...PROFILE_COLUMNS, 'users.id', 'users.active', 'users.organization_id', 'users.patient_id'])
    .where('users.subject', '=', subject)
    .executeTakeFirst()
}

/**
 * Whether a patient's own account still has its record: a live patient of its organization. Its own
 * statement, with the organization, rather than a join from users: patients are spread by
 * organization (db/sharding-plan.ts), and only patients' accounts need it.
 */
export async function hasLivePatient(db: Db, organizationId: number, patientId: number): Promise<boolean> {
  const row = await db
    .selectFrom('patients')
    .select('id')
    .where('organization_id', '=', organizationId)
    .where('id', '=', patientId)
    .where('deleted_at', 'is', null)
    .executeTakeFirst()
  return row !== undefined
}

/**
 * What an access token says about an active account: besides its profile, the FHIR resource that
 * is the user (`fhirUser`): its patient record for a patient's own account, read with it, or the
 * provider record linked to it (providers.user_id) for anyone else. The provider is a second
 * statement, with the organization (providers are spread by organization, db/sharding-plan.ts): one
 * index lookup per sign-in or refresh, none per request.
 */
export async function findTokenSubject(db: Db, userId: number) {
  const row = await accountsWithOrganization(db)
    .select([...PROFILE_COLUMNS, 'users.subject', 'users.patient_id', 'users.organization_id'])
    .where('users.id', '=', userId)
    .where('users.active', '=', true)
    .executeTakeFirst()
  if (!row) return undefined
  const provider =
    row.patient_id === null
      ? await db
          .selectFrom('providers')
          .select('id')
          .where('organization_id', '=', row.organization_id)
          .where('user_id', '=', userId)
          .executeTakeFirst()
      : undefined
  return {
    subject: row.subject,
    email: row.email,
    firstName: row.first_name,
    lastName: row.last_name,
    roles: row.roles,
    groupPath: row.group_path,
    ...fhirUserOf(row.patient_id, provider?.id),
  }
}

/** A patient's own account is its patient (and carries it as `patient`); a provider's, its Practitioner. */
function fhirUserOf(patientId: number | null, providerId: number | undefined) {
  if (patientId !== null) return { patient: String(patientId), fhirUser: `Patient/${patientId}` }
  if (providerId !== undefined) return { fhirUser: `Practitioner/${providerId}` }
  return {}
}

/**
 * The FHIR resource an account stands for (SMART's `fhirUser`), relative to the FHIR base: a
 * patient's own account is their Patient, an account linked to a provider record that
 * Practitioner; undefined for any other (an administrator, a service account).
 */
export async function findFhirUser(db: Db, userId: number): Promise<string | undefined> {
  return (await findTokenSubject(db, userId))?.fhirUser
}
