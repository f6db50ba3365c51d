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
    .select([...PROFILE_COLUMNS, 'users.id', 'users.active', 'users.organization_id'])
    .where('users.subject', '=', subject)
    .executeTakeFirst()
}

/** What an access token says about an active account. */
export async function findTokenSubject(db: Db, userId: number) {
  const row = await accountsWithOrganization(db)
    .select([...PROFILE_COLUMNS, 'users.subject'])
    .where('users.id', '=', userId)
    .where('users.active', '=', true)
    .executeTakeFirst()
  return (
    row && {
      subject: row.subject,
      email: row.email,
      firstName: row.first_name,
      lastName: row.last_name,
      roles: row.roles,
      groupPath: row.group_path,
    }
  )
}

/**
 * The FHIR resource an account stands for (SMART's `fhirUser`), relative to the FHIR base: a
 * patient's own account is their Patient, an account linked to a provider record that
 * Practitioner; undefined for any other (an administrator, a service account).
 */
export async function findFhirUser(db: Db, userId: number): Promise<string | undefined> {
  const row = await db
    .selectFrom('users')
    .leftJoin('providers', (join) =>
      join
        .onRef('providers.user_id', '=', 'users.id')
        .onRef('providers.organization_id', '=', 'users.organization_id'),
    )
    .select(['users.patient_id', 'providers.id as provider_id'])
    .where('users.id', '=', userId)
    .executeTakeFirst()
  if (row?.patient_id != null) return `Patient/${row.patient_id}`
  if (row?.provider_id != null) return `Practitioner/${row.provider_id}`
  return undefined
}
