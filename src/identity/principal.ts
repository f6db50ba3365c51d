import type { Kysely } from 'kysely'
import type { Database } from '../../db/database.js'
import type { AccessTokenClaims } from '../../schemas/auth.js'
import { authorityOf } from '../access/roles.js'
import { AppError, forbidden } from '../errors.js'
import { TtlCache } from '../lib/ttl-cache.js'
import { findAccountBySubject } from './account-queries.js'
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
  /** A SMART launch context: the patient (id) the token was issued for, if any. */
  launchPatient: string | undefined
  /** The session the token belongs to (`sid`), which signing out or a password change ends. */
  sessionId: string | undefined
}

type Account = NonNullable<Awaited<ReturnType<typeof findAccountBySubject>>>

// Accounts are looked up once per subject per interval, not once per request. A deactivated
// account therefore keeps working for at most this long.
export const ACCOUNT_CACHE_TTL_MS = 30_000

function audiences(claims: AccessTokenClaims): string[] {
  if (claims.aud === undefined) return []
  return Array.isArray(claims.aud) ? claims.aud : [claims.aud]
}

/**
 * Turns verified token claims into a Principal: the token must be an access token for this client,
 * its subject a known active account, and its `groups` must include the account's organization.
 * With `provision` (external provider), a subject seen for the first time gets its account here.
 */
export function createPrincipalResolver(
  db: Kysely<Database>,
  clientId: string,
  { provision }: { provision: boolean },
) {
  const accounts = new TtlCache<string, Account>(ACCOUNT_CACHE_TTL_MS, 10_000)

  async function accountOf(claims: AccessTokenClaims): Promise<Account | undefined> {
    const cached = accounts.get(claims.sub)
    if (cached) return cached
    let account = await findAccountBySubject(db, claims.sub)
    if (!account && provision) {
      await provisionAccount(db, claims)
      account = await findAccountBySubject(db, claims.sub)
    }
    if (account) accounts.set(claims.sub, account)
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
    const roles = claims.realm_access?.roles ?? []
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
      launchPatient: claims.patient,
      sessionId: claims.sid,
    }
  }
}
