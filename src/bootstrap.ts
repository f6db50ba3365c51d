import { randomBytes } from 'node:crypto'
import { type Kysely, sql } from 'kysely'
import type { Database } from '../db/database.js'
import type { Config } from './config.js'
import { createOrganization, createUser } from './modules/users/service.js'

export interface BootstrapResult {
  email: string
  /** Set only when the password was generated; shown once and never stored in clear. */
  generatedPassword?: string
}

const slug = (name: string) =>
  name
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '') || 'default'

// Any constant works; it only has to be the same for every instance starting at once.
const BOOTSTRAP_LOCK = 727_001

/**
 * On first start (no organization yet) creates one organization and an ADMIN+PROVIDER user, so a
 * new deployment can be signed into at once. Does nothing on later starts.
 */
export async function bootstrapAdmin(
  db: Kysely<Database>,
  config: Config,
): Promise<BootstrapResult | undefined> {
  return db.transaction().execute(async (trx) => {
    await sql`select pg_advisory_xact_lock(${BOOTSTRAP_LOCK})`.execute(trx)
    const existing = await trx.selectFrom('organizations').select('id').limit(1).executeTakeFirst()
    if (existing) return undefined
    const organization = await createOrganization(trx, {
      name: config.BOOTSTRAP_ORGANIZATION,
      groupPath: `/${slug(config.BOOTSTRAP_ORGANIZATION)}`,
    })
    const generatedPassword = config.ADMIN_PASSWORD ? undefined : randomBytes(18).toString('base64url')
    await createUser(trx, {
      organizationId: organization.id,
      email: config.ADMIN_EMAIL,
      password: config.ADMIN_PASSWORD ?? (generatedPassword as string),
      firstName: 'Practice',
      lastName: 'Administrator',
      roles: ['ADMIN', 'PROVIDER'],
    })
    return { email: config.ADMIN_EMAIL, ...(generatedPassword ? { generatedPassword } : {}) }
  })
}
