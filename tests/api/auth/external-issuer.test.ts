import type { Bundle } from '@medplum/fhirtypes'
import { decodeJwt } from 'jose'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { buildTestApp } from '../../helpers/app.js'
import { bearer, createPatient, newOrganization, type TestUser } from '../../helpers/factories.js'
import { fhirGet, matchIds } from '../../helpers/fhir.js'
import { newSigningKey, type SigningKeyPair, startJwksServer } from '../../helpers/servers/jwks-server.js'

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

const now = () => Math.floor(Date.now() / 1000)

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

  it('accepts a token without a session id, and one living exactly OIDC_ACCESS_TOKEN_MAX_LIFETIME_SECONDS', async () => {
    const token = await provider.sign(firstKey, claimsFor(user.subject, [user.groupPath]), 3600)
    expect(decodeJwt(token).sid).toBeUndefined()
    expect((await me(token)).statusCode).toBe(200)
  })

  it.each([
    ['issued a day in the future', { iat: now() + 86_400, exp: now() + 90_000 }, /issued in the future/],
    ['living ten years', { iat: now(), exp: now() + 10 * 365 * 86_400 }, /lifetime/],
    ['living a second longer than the default hour', { iat: now(), exp: now() + 3601 }, /lifetime/],
  ])('returns 401 AUTH_001 for a token %s', async (_label, times, details) => {
    const response = await me(
      await provider.sign(firstKey, { ...claimsFor(user.subject, [user.groupPath]), ...times }),
    )
    expect(response.statusCode).toBe(401)
    expect(response.json()).toMatchObject({ success: false, error: { code: 'AUTH_001' } })
    expect(response.json().error.details).toMatch(details)
  })

  it('bounds token lifetimes by OIDC_ACCESS_TOKEN_MAX_LIFETIME_SECONDS', async () => {
    const strict = await buildTestApp({
      OIDC_ISSUER_URL: provider.issuer,
      OIDC_CLIENT_ID: 'ehr-client',
      OIDC_ACCESS_TOKEN_MAX_LIFETIME_SECONDS: '600',
    })
    try {
      const member = await (await newOrganization(strict)).user('PROVIDER')
      const meOn = async (lifetime: number) =>
        strict.inject({
          url: '/api/auth/me',
          headers: bearer(
            await provider.sign(firstKey, claimsFor(member.subject, [member.groupPath]), lifetime),
          ),
        })
      expect((await meOn(600)).statusCode).toBe(200)
      const refused = await meOn(601)
      expect(refused.statusCode).toBe(401)
      expect(refused.json().error.code).toBe('AUTH_001')
    } finally {
      await strict.close()
    }
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

describe('SMART scopes in tokens of an external provider (GET /fhir/R4/Observation)', () => {
  const CATEGORY = 'http://terminology.hl7.org/CodeSystem/observation-category'

  /** Two patients, each with vital signs and a lab result, made through the REST API. */
  async function clinic() {
    const org = await newOrganization(app)
    const doctor = await org.user('PROVIDER')
    const token = await provider.sign(firstKey, claimsFor(doctor.subject, [doctor.groupPath]))
    const post = async (url: string, payload: object) => {
      const response = await app.inject({ method: 'POST', url, headers: bearer(token), payload })
      expect(response.statusCode, response.body).toBe(201)
      return response.json().data.id as number
    }
    const [ada, alan] = [await createPatient(app, { token }), await createPatient(app, { token })]
    const lab = (patient: number) =>
      post(`/api/patients/${patient}/lab-results`, {
        testCode: '2345-7',
        testName: 'Glucose',
        value: 95,
        unit: 'mg/dL',
        resultedAt: '2024-03-01T12:00:00Z',
      })
    const vitals = (patient: number) =>
      post(`/api/patients/${patient}/vitals`, { recordedAt: '2024-03-01T08:00:00Z', heartRate: 70 })
    const ids = { adaLab: await lab(ada), adaVitals: await vitals(ada), alanLab: await lab(alan) }
    await vitals(alan)
    /** A PROVIDER token of the provider with these scopes and launch patient. */
    const smart = (scope: string, patient = ada) =>
      provider.sign(firstKey, {
        ...claimsFor(doctor.subject, [doctor.groupPath]),
        scope: `openid profile ${scope}`,
        patient: String(patient),
      })
    return { ada, alan, ids, smart }
  }

  it('keeps a granular v2 category scope to its category and launch patient', async () => {
    const { ada, ids, smart } = await clinic()
    for (const category of [`${CATEGORY}|laboratory`, 'laboratory']) {
      const token = await smart(`patient/Observation.rs?category=${category}`)
      const search = await fhirGet(app, token, '/Observation')
      expect(search.statusCode, category).toBe(200)
      expect(matchIds(search.json() as Bundle), category).toEqual([ids.adaLab])
      expect((await fhirGet(app, token, `/Observation?patient=${ada}`)).json().total).toBe(1)
      expect((await fhirGet(app, token, `/Observation/${ids.adaLab}`)).statusCode).toBe(200)
      expect((await fhirGet(app, token, `/Observation/${ids.adaVitals}`)).statusCode, category).toBe(403)
      expect((await fhirGet(app, token, `/Observation/${ids.alanLab}`)).statusCode, category).toBe(403)
    }
  })

  it('returns 403 for every FHIR read of a token whose SMART scopes all fail to parse', async () => {
    const { ada, alan, ids, smart } = await clinic()
    for (const scope of ['patient/Observation.sr', 'patient/Observation.rs?code=2345-7']) {
      const token = await smart(scope)
      for (const path of [
        '/Observation',
        `/Observation/${ids.alanLab}`,
        `/Patient/${alan}`,
        `/Patient/${ada}`,
      ]) {
        const response = await fhirGet(app, token, path)
        expect(response.statusCode, `${scope} ${path}`).toBe(403)
        expect(response.json().resourceType).toBe('OperationOutcome')
      }
    }
  })

  it('returns 403 on the /api routes for a token with SMART scopes, parsed or not, whatever its roles', async () => {
    const { ada, smart } = await clinic()
    for (const scope of ['patient/Observation.rs', 'patient/Observation.sr']) {
      const token = await smart(scope)
      for (const url of ['/api/patients', `/api/patients/${ada}`, `/api/patients/${ada}/vitals`]) {
        const response = await app.inject({ url, headers: { authorization: `Bearer ${token}` } })
        expect(response.statusCode, `${scope} ${url}`).toBe(403)
        expect(response.json().error.code).toBe('AUTH_003')
      }
    }
  })
})
