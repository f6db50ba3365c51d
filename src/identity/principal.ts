import type { Db } from '../../db/database.js'
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
  /** When (epoch ms) the read of the account behind it goes stale: nothing may keep this principal longer. */
  accountReadUntil: number
}

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
    const account = { ...found, readUntil }
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
    const roles = external ? granted : granted.filter((role) => account.roles.includes(role))
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
      accountReadUntil: account.readUntil,
    }
  }
}
