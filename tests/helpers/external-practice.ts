import { randomUUID } from 'node:crypto'
import type { App } from '../../src/app.js'
import { createOrganization } from '../../src/modules/users/service.js'
import { buildTestApp } from './app.js'
import { type OidcProviderHarness, type OidcTestUser, startOidcProvider } from './servers/oidc-provider.js'

/** The service's client at the external provider. */
export const EXTERNAL_CLIENT = {
  clientId: 'ehr-api',
  clientSecret: 'provider-client-secret',
  redirectUri: 'https://app.example/callback',
}

/**
 * A person at the external provider, of the practice whose group is `groupPath` unless `groups`
 * says otherwise: `<name>@<practice>.example`, password `<name>-password-123`.
 */
export function externalPerson(
  groupPath: string,
  name: string,
  roles: string[],
  groups = [groupPath],
): OidcTestUser {
  const address = `${name}@${groupPath.split('/').at(-1)}.example`
  return {
    subject: `${name}-${randomUUID()}`,
    username: address,
    password: `${name}-password-123`,
    email: address,
    givenName: (name[0] ?? '').toUpperCase() + name.slice(1),
    familyName: 'Tester',
    roles,
    groups,
  }
}

export interface ExternalPractice {
  provider: OidcProviderHarness
  /** The service, signing its users in at the provider. */
  app: App
  /** The organization of the practice's group, known to the service. */
  organizationId: number
  close(): Promise<void>
}

/** A real OpenID provider (realm `clinic`, Keycloak paths) holding `users`, and the service using it. */
export async function startExternalPractice(
  groupPath: string,
  users: OidcTestUser[],
): Promise<ExternalPractice> {
  const provider = await startOidcProvider({ realm: 'clinic', ...EXTERNAL_CLIENT, users })
  const app = await buildTestApp({
    OIDC_ISSUER_URL: provider.issuer,
    OIDC_CLIENT_ID: EXTERNAL_CLIENT.clientId,
    OIDC_CLIENT_SECRET: EXTERNAL_CLIENT.clientSecret,
  })
  const { id } = await createOrganization(app.db, { name: 'External practice', groupPath })
  return {
    provider,
    app,
    organizationId: id,
    async close() {
      await app.close()
      await provider.close()
    },
  }
}
