import { randomBytes } from 'node:crypto'
import { sql } from 'kysely'
import type { Db } from '../db/database.js'
import type { Config } from './config.js'
import { createOrganization, createUser } from './modules/users/service.js'

export interface BootstrapResult {
  email: string
  /** Set only when the password was generated; shown once and never stored in clear. */
  generatedPassword?: string
}

// Any constant works; it only has to be the same for every instance starting at once.
const BOOTSTRAP_LOCK = 727_001

/**
 * On first start (no organization yet) creates one organization and an ADMIN+PROVIDER user, so a
 * new deployment can be signed into at once. Does nothing on later starts.
 */
export async function bootstrapAdmin(
  db: Db,
  config: Config,
  onCreate?: () => void,
): Promise<BootstrapResult | undefined> {
  return db.transaction().execute(async (trx) => {
    await sql`select pg_advisory_xact_lock(${BOOTSTRAP_LOCK})`.execute(trx)
    const existing = await trx.selectFrom('organizations').select('id').limit(1).executeTakeFirst()
    if (existing) return undefined
    onCreate?.()
    const { adminEmail, adminPassword, organization: newOrganization } = config.bootstrap
    const organization = await createOrganization(trx, newOrganization)
    const generatedPassword = adminPassword ? undefined : randomBytes(18).toString('base64url')
    await createUser(trx, {
      organizationId: organization.id,
      email: adminEmail,
      password: adminPassword ?? (generatedPassword as string),
      firstName: 'Practice',
      lastName: 'Administrator',
      roles: ['ADMIN', 'PROVIDER'],
    })
    return { email: adminEmail, ...(generatedPassword ? { generatedPassword } : {}) }
  })
}

/**
 * What a newcomer needs after the very first start: where things are and how to sign in. Shown
 * once, with the bootstrap (an empty database); the generated password appears nowhere else.
 */
export function firstStartBanner(config: Config, result: BootstrapResult, seedHint = true): string {
  const url = config.server.publicUrl
  const credentials = result.generatedPassword
    ? `${result.email} / ${result.generatedPassword}\nThis password is shown only now.`
    : `${result.email} (password from ADMIN_PASSWORD)`
  const lines = [
    `Bootstrap administrator created: ${credentials}`,
    `  API       ${url}/api   (sign in: POST ${url}/api/auth/login {"username","password"} -> data.token)`,
    `  Explorer  ${url}/swagger-ui.html`,
    `  Metrics   ${url}/actuator/prometheus`,
  ]
  if (seedHint) {
    lines.push(
      config.database.url
        ? '  Demo data: run `npm run seed` (in the image: `node dist/cli.mjs seed`) beside the server.'
        : '  Demo data: stop the server, run `npm run seed` (in the image: `node dist/cli.mjs seed`), start again.',
    )
  }
  return `\n${lines.join('\n')}\n\n`
}

/**
 * Settings that are safe only in development and tests, named at every start (as warnings in the
 * log) so that one left on in production is seen.
 */
export function startupWarnings(config: Config): string[] {
  const warnings: string[] = []
  if (config.webhooks.allowPrivateTargets) {
    warnings.push(
      'WEBHOOK_ALLOW_PRIVATE_TARGETS=true: webhook and client JWKS URLs may point at loopback, private, link-local and cloud metadata addresses, so callers can reach internal services (SSRF); development and tests only',
    )
  }
  return warnings
}
