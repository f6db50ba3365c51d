import { randomUUID } from 'node:crypto'
import { type DemoCounts, seedDemoPractice } from '../../scripts/seed/demo-practice.js'
import type { Role } from '../../src/access/roles.js'
import type { App } from '../../src/app.js'
import { createOrganization } from '../../src/modules/users/service.js'
import { tokenFor } from './factories.js'

/**
 * Fills the app's empty database with the demo practice (npm run seed), as the only organization,
 * and answers its counts and a token of a user of it with `roles`.
 */
export async function demoPractice(
  app: App,
  { patients, roles }: { patients: number; roles: Role[] },
): Promise<{ counts: DemoCounts; token: string }> {
  const groupPath = '/default-practice'
  const organization = await createOrganization(app.db, { name: 'Default Practice', groupPath })
  const counts = await seedDemoPractice(app.db, {
    patients,
    force: false,
    billing: { currency: 'USD', taxRateBasisPoints: 0 },
  })
  const subject = randomUUID()
  const email = `${subject}@example.test`
  await app.db
    .insertInto('users')
    .values({
      organization_id: organization.id,
      subject,
      email,
      first_name: 'Demo',
      last_name: 'Reader',
      roles,
    })
    .execute()
  return { counts, token: tokenFor(app, { subject, email, roles, groupPath }) }
}
