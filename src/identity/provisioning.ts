import type { Db } from '../../db/database.js'
import type { AccessTokenClaims } from '../../schemas/auth.js'
import { isRole } from '../access/roles.js'
import { forbidden } from '../errors.js'

function namesOf(claims: AccessTokenClaims): { first: string; last: string } {
  if (claims.given_name || claims.family_name) {
    return { first: claims.given_name ?? '', last: claims.family_name ?? '' }
  }
  return { first: claims.preferred_username ?? claims.sub, last: '' }
}

/**
 * Creates the account of a subject seen for the first time from an external provider's token:
 * names, e-mail and roles from the claims, the organization from the `groups` claim. A token whose
 * groups match no organization is refused; nobody lands in a default organization by accident.
 */
export async function provisionAccount(db: Db, claims: AccessTokenClaims): Promise<void> {
  const groups = claims.groups ?? []
  const organization =
    groups.length > 0
      ? await db
          .selectFrom('organizations')
          .select('id')
          .where('group_path', 'in', groups)
          .orderBy('id')
          .executeTakeFirst()
      : undefined
  if (!organization) throw forbidden("None of the token's groups is an organization of this service")
  if (!claims.email) throw forbidden('The token carries no e-mail address, which an account needs')

  const { first, last } = namesOf(claims)
  const inserted = await db
    .insertInto('users')
    .values({
      organization_id: organization.id,
      subject: claims.sub,
      email: claims.email,
      password_hash: null,
      first_name: first,
      last_name: last,
      roles: (claims.realm_access?.roles ?? []).filter(isRole),
    })
    .onConflict((conflict) => conflict.doNothing())
    .returning('id')
    .executeTakeFirst()
  if (inserted) return
  // Nothing inserted: either a concurrent first call provisioned this subject (fine), or the
  // e-mail belongs to another account, which is not linked silently.
  const existing = await db
    .selectFrom('users')
    .select('id')
    .where('subject', '=', claims.sub)
    .executeTakeFirst()
  if (!existing) {
    throw forbidden(
      'An account with this e-mail exists but is linked to another identity; ask an administrator',
    )
  }
}
