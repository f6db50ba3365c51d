import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../src/app.js'
import { buildTestApp } from '../helpers/app.js'
import { newOrganization, type TestUser } from '../helpers/factories.js'
import { newSigningKey, type SigningKeyPair, startJwksServer } from '../helpers/jwks-server.js'

let app: App
let provider: Awaited<ReturnType<typeof startJwksServer>>
let firstKey: SigningKeyPair
let user: TestUser

beforeAll(async () => {
  provider = await startJwksServer('clinic')
  firstKey = await newSigningKey('key-1')
  provider.publish([firstKey])
  app = await buildTestApp({ OIDC_ISSUER_URL: provider.issuer, OIDC_CLIENT_ID: 'ehr-client' })
  user = await (await newOrganization(app)).user('PROVIDER')
})
afterAll(async () => {
  await app.close()
  await provider.close()
})

const claimsFor = (subject: string, groups: string[]) => ({
  sub: subject,
  aud: 'account',
  azp: 'ehr-client',
  realm_access: { roles: ['PROVIDER', 'offline_access'] },
  groups,
})

const me = (token: string) =>
  app.inject({ url: '/api/auth/me', headers: { authorization: `Bearer ${token}` } })

describe('with OIDC_ISSUER_URL (external identity provider)', () => {
  it("accepts a token signed with a key from the provider's JWKS", async () => {
    const response = await me(await provider.sign(firstKey, claimsFor(user.subject, [user.groupPath])))
    expect(response.statusCode).toBe(200)
    expect(response.json().data).toMatchObject({ id: String(user.id), roles: ['PROVIDER', 'offline_access'] })
  })

  it('picks up a rotated key without a restart', async () => {
    const rotated = await newSigningKey('key-2')
    provider.publish([firstKey, rotated])
    const before = provider.jwksRequests
    const response = await me(await provider.sign(rotated, claimsFor(user.subject, [user.groupPath])))
    expect(response.statusCode).toBe(200)
    expect(provider.jwksRequests).toBeGreaterThan(before)
  })

  it('returns 401 for a key the provider does not publish', async () => {
    const unpublished = await newSigningKey('key-x')
    const response = await me(await provider.sign(unpublished, claimsFor(user.subject, [user.groupPath])))
    expect(response.statusCode).toBe(401)
    expect(response.json().error.code).toBe('AUTH_001')
  })

  it('returns 401 AUTH_002 for an expired token of the provider', async () => {
    const response = await me(await provider.sign(firstKey, claimsFor(user.subject, [user.groupPath]), -30))
    expect(response.statusCode).toBe(401)
    expect(response.json().error.code).toBe('AUTH_002')
  })

  it('returns 401 for a token issued for another client', async () => {
    const response = await me(
      await provider.sign(firstKey, { ...claimsFor(user.subject, [user.groupPath]), azp: 'someone-else' }),
    )
    expect(response.statusCode).toBe(401)
  })

  it('answers 503 in the envelope when the provider cannot sign in', async () => {
    const response = await app.inject({
      method: 'POST',
      url: '/api/auth/login',
      payload: { username: 'a@b.c', password: 'whatever-password' },
    })
    expect(response.statusCode).toBe(503)
    expect(response.json()).toMatchObject({ success: false, message: 'Identity provider unavailable' })
  })
})
