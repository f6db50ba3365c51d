import type { Db } from '../../db/database.js'
import type { AccessTokenClaims } from '../../schemas/auth.js'
import { authorityOf } from '../access/roles.js'
import { AppError, forbidden } from '../errors.js'
import { TtlCache } from '../lib/ttl-cache.js'
import { findAccountBySubject, hasLivePatient } from './account-queries.js'
import { provisionAccount } from './provisioning.js'

/** The authenticated caller of a request. */
export interface Principal {
  userId: number
  subject: string
  /** The client the token was issued to (`azp`). */
  clientId: string
  organizationId: number
  email: string
  firstName: string
  lastName: string
  roles: string[]
  authorities: ReadonlySet<string>
  /** The token's OAuth scopes (`scope`), e.g. SMART on FHIR's `patient/Observation.rs`. */
  scopes: readonly string[]
  /**
   * A SMART launch context: the patient (id) the token was issued for, if any. For a patient's own
   * account, always its patient record (users.patient_id), whatever the token says.
   */
  launchPatient: string | undefined
  /**
   * A patient's own account (linked to a patient record, or holding PATIENT): every FHIR read is kept
   * to `launchPatient`'s compartment as a `patient/` scope keeps a token, whatever its scopes.
   */
  patientAccount: boolean
  /** The session the token belongs to (`sid`), which signing out or a password change ends. */
  sessionId: string | undefined
  /** When (epoch ms) the read of the account behind it goes stale: nothing may keep this principal longer. */
  accountReadUntil: number
}

/** The roles a patient's own account keeps (src/modules/users/patient-accounts.ts gives it these only). */
const PATIENT_ACCOUNT_ROLES: readonly string[] = ['PATIENT', 'USER']

type Account = NonNullable<Awaited<ReturnType<typeof findAccountBySubject>>> & { readUntil: number }

// Accounts are looked up once per subject per interval, not once per request. A deactivated
// account, a removed role or a move to another organization therefore takes effect within this.
export const ACCOUNT_CACHE_TTL_MS = 30_000

function audiences(claims: AccessTokenClaims): string[] {
  if (claims.aud === undefined) return []
  return Array.isArray(claims.aud) ? claims.aud : [claims.aud]
}

/**
 * Turns verified token claims into a Principal: the token must be an access token for this client,
 * its subject a known active account, and its `groups` must include the account's organization.
 * With `external` (an external provider), a subject seen for the first time gets its account here,
 * and the roles are the token's: the provider owns them. Otherwise the service owns the roles, and
 * a token's roles count only while the account still holds them, so that a role taken away stops
 * working with the account cache rather than when the token expires; a role given is in the next
 * token (sign-in or refresh).
 */
export function createPrincipalResolver(db: Db, clientId: string, { external }: { external: boolean }) {
  const accounts = new TtlCache<string, Account>(ACCOUNT_CACHE_TTL_MS, 10_000)

  async function accountOf(claims: AccessTokenClaims): Promise<Account | undefined> {
    const cached = accounts.get(claims.sub)
    if (cached) return cached
    const readUntil = Date.now() + ACCOUNT_CACHE_TTL_MS
    let found = await findAccountBySubject(db, claims.sub)
    if (!found && external) {
      await provisionAccount(db, claims)
      found = await findAccountBySubject(db, claims.sub)
    }
    if (!found) return undefined
    // A deleted patient's own account reads nothing more: as if deactivated.
    const active =
      found.active &&
      (found.patient_id === null || (await hasLivePatient(db, found.organization_id, found.patient_id)))
    const account = { ...found, active, readUntil }
    accounts.set(claims.sub, account)
    return account
  }

  return async (claims: AccessTokenClaims): Promise<Principal> => {
    if (claims.typ !== undefined && claims.typ !== 'Bearer') {
      throw new AppError('AUTH_001', 'The token is not an access token')
    }
    if (claims.azp !== clientId && !audiences(claims).includes(clientId)) {
      throw new AppError('AUTH_001', 'The token was not issued for this service')
    }
    const account = await accountOf(claims)
    if (!account?.active) throw new AppError('AUTH_001', 'The token belongs to no active account')
    if (!claims.groups?.includes(account.group_path)) {
      throw forbidden("The token's groups do not include the account's organization")
    }
    const granted = claims.realm_access?.roles ?? []
    const held = external ? granted : granted.filter((role) => account.roles.includes(role))
    // A patient's own account is never staff, whatever roles it was given: a staff role would open
    // the REST routes, which know nothing of the compartment it is kept to.
    const linked = account.patient_id !== null
    const roles = linked ? held.filter((role) => PATIENT_ACCOUNT_ROLES.includes(role)) : held
    const patientAccount = linked || roles.includes('PATIENT')
    return {
      userId: account.id,
      subject: claims.sub,
      clientId: claims.azp ?? clientId,
      organizationId: account.organization_id,
      email: account.email,
      firstName: account.first_name,
      lastName: account.last_name,
      roles,
      authorities: new Set(roles.map(authorityOf)),
      scopes: claims.scope?.split(' ').filter(Boolean) ?? [],
      // Only the account's own link counts for a patient: a PATIENT without one reads nothing.
      launchPatient: patientAccount ? (linked ? String(account.patient_id) : undefined) : claims.patient,
      patientAccount,
      sessionId: claims.sid,
      accountReadUntil: account.readUntil,
    }
  }
}
