import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { createOrganization } from '../../../src/modules/users/service.js'
import { buildTestApp } from '../../helpers/app.js'
import { bearer } from '../../helpers/factories.js'
import {
  type OidcProviderHarness,
  type OidcTestUser,
  startOidcProvider,
} from '../../helpers/servers/oidc-provider.js'

const clientId = 'ehr-api'
const clientSecret = 'outage-client-secret'
const groupPath = `/practices/${randomUUID()}`
const carol: OidcTestUser = {
  subject: `carol-${randomUUID()}`,
  username: 'carol@outage.example',
  password: 'carol-password-123',
  email: 'carol@outage.example',
  givenName: 'Carol',
  familyName: 'Tester',
  roles: ['PROVIDER'],
  groups: [groupPath],
}

let provider: OidcProviderHarness
let app: App

beforeAll(async () => {
  provider = await startOidcProvider({
    realm: 'outage',
    clientId,
    clientSecret,
    redirectUri: 'https://app.example/callback',
    users: [carol],
  })
  app = await buildTestApp({
    OIDC_ISSUER_URL: provider.issuer,
    OIDC_CLIENT_ID: clientId,
    OIDC_CLIENT_SECRET: clientSecret,
  })
  await createOrganization(app.db, { name: 'Outage practice', groupPath })
})
afterAll(async () => {
  await provider.restore()
  await app.close()
  await provider.close()
})

const login = () =>
  app.inject({
    method: 'POST',
    url: '/api/auth/login',
    payload: { username: carol.username, password: carol.password },
  })
const me = (token: string) => app.inject({ url: '/api/auth/me', headers: bearer(token) })

/** A signed-in session whose signing key the service has already fetched and cached. */
async function verifiedSession() {
  const session = (await login()).json().data
  expect((await me(session.token)).statusCode).toBe(200)
  return session as { token: string; refreshToken: string }
}

function expectProviderUnavailable(response: Awaited<ReturnType<typeof login>>) {
  expect(response.statusCode).toBe(503)
  expect(response.json()).toMatchObject({
    success: false,
    message: 'Identity provider unavailable',
    error: { details: expect.stringMatching(/identity provider did not answer/) },
  })
}

describe('when the external identity provider is down (connections refused)', () => {
  it('keeps verifying tokens of cached keys, answers login and refresh with 503 at once, and recovers by itself', async () => {
    const session = await verifiedSession()
    await provider.outage('refuse')

    const startedAt = Date.now()
    expect((await me(session.token)).statusCode).toBe(200)
    expect((await app.inject({ url: '/api/patients', headers: bearer(session.token) })).statusCode).toBe(200)
    expectProviderUnavailable(await login())
    expectProviderUnavailable(
      await app.inject({
        method: 'POST',
        url: '/api/auth/refresh',
        payload: { refreshToken: session.refreshToken },
      }),
    )
    expect(Date.now() - startedAt).toBeLessThan(3000)

    await provider.restore()
    expect((await login()).statusCode).toBe(200)
  })
})

describe('when the external identity provider hangs (accepts, never answers)', () => {
  it('answers within the provider timeout instead of hanging, and verifies new keys as soon as it is back', async () => {
    const session = await verifiedSession()
    // A token signed with a key the service has not fetched yet.
    await provider.rotateKeys()
    const freshToken = (await login()).json().data.token as string
    await provider.outage('hang')

    const startedAt = Date.now()
    const [cached, signIn, unknownKey] = await Promise.all([me(session.token), login(), me(freshToken)])
    expect(cached.statusCode).toBe(200)
    expectProviderUnavailable(signIn)
    expect(unknownKey.statusCode).toBe(401)
    expect(unknownKey.json().error).toMatchObject({
      code: 'AUTH_001',
      details: expect.stringMatching(/did not answer/),
    })
    // Sign-in answers 503 within the documented 5 s (the provider timeouts are 4 s).
    expect(Date.now() - startedAt).toBeLessThan(5000)

    await provider.restore()
    const recoveredAt = Date.now()
    expect((await me(freshToken)).statusCode).toBe(200)
    expect(Date.now() - recoveredAt).toBeLessThan(2000)
  })
})
