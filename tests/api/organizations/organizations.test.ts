import type { Bundle, Location, Organization } from '@medplum/fhirtypes'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { buildTestApp } from '../../helpers/app.js'
import {
  bearer,
  newOrganization,
  npiOf,
  type TestOrganization,
  type TestUser,
} from '../../helpers/factories.js'
import { expectFhir, fhirGet } from '../../helpers/fhir.js'
import { usCoreErrors } from '../../helpers/us-core.js'

// The practice's own details (REST), published as its FHIR Organization and Location.

let app: App

beforeAll(async () => {
  app = await buildTestApp()
})
afterAll(async () => {
  await app.close()
})

const PROFILES = 'http://hl7.org/fhir/us/core/StructureDefinition'
const NPI = npiOf('124531959')
const DETAILS = {
  name: 'Riverside Family Practice',
  npi: NPI,
  phoneNumber: '+1 555 010 2000',
  email: 'front-desk@riverside.example',
  address: { street: '12 Main Street', city: 'Springfield', state: 'IL', postalCode: '62701', country: 'US' },
}

const call = (user: TestUser, method: 'GET' | 'PUT' | 'PATCH', url: string, payload?: object, headers = {}) =>
  app.inject({
    method,
    url,
    headers: {
      ...bearer(user.token),
      ...(method === 'PATCH' ? { 'content-type': 'application/merge-patch+json' } : {}),
      ...headers,
    },
    ...(payload ? { payload } : {}),
  })

async function practice(): Promise<{ org: TestOrganization; admin: TestUser; url: string }> {
  const org = await newOrganization(app)
  return { org, admin: await org.user('ADMIN'), url: `/api/organizations/${org.id}` }
}

describe('/api/organizations/{id}', () => {
  it('keeps the practice’s NPI, phone, e-mail and address, which FHIR publishes as US Core', async () => {
    const { org, admin, url } = await practice()
    const put = await call(admin, 'PUT', url, DETAILS)
    expect(put.statusCode, put.body).toBe(200)
    expect(put.json().data).toMatchObject({ id: org.id, ...DETAILS, version: 2 })
    const frontDesk = await org.user('FRONT_DESK')
    const read = await call(frontDesk, 'GET', url)
    expect(read.json().data).toEqual(put.json().data)
    expect(read.headers.etag).toBe('W/"2"')

    const organization = expectFhir(await fhirGet(app, frontDesk, `/Organization/${org.id}`)) as Organization
    expect(organization).toMatchObject({
      identifier: [{ system: 'http://hl7.org/fhir/sid/us-npi', value: NPI }],
      name: DETAILS.name,
      telecom: [
        { system: 'email', value: DETAILS.email },
        { system: 'phone', value: DETAILS.phoneNumber },
      ],
      address: [
        { line: ['12 Main Street'], city: 'Springfield', state: 'IL', postalCode: '62701', country: 'US' },
      ],
    })
    expect(usCoreErrors(organization, `${PROFILES}/us-core-organization|6.1.0`)).toEqual([])
    const location = expectFhir(await fhirGet(app, frontDesk, `/Location/${org.id}`)) as Location
    expect(location.address).toEqual(organization.address?.[0])
    expect(location.telecom).toEqual(organization.telecom)
    expect(usCoreErrors(location, `${PROFILES}/us-core-location|6.1.0`)).toEqual([])
  })

  it('changes some details by merge patch, and clears what a replacement leaves out', async () => {
    const { admin, url } = await practice()
    await call(admin, 'PUT', url, DETAILS)
    const patched = await call(admin, 'PATCH', url, {
      phoneNumber: null,
      address: { street: '14 Main Street' },
    })
    expect(patched.statusCode, patched.body).toBe(200)
    expect(patched.json().data).toMatchObject({
      phoneNumber: null,
      address: { ...DETAILS.address, street: '14 Main Street' },
      version: 3,
    })
    const replaced = await call(admin, 'PUT', url, { name: 'Riverside' })
    expect(replaced.json().data).toMatchObject({ name: 'Riverside', npi: null, email: null, version: 4 })
    expect(replaced.json().data.address).toEqual({
      street: null,
      city: null,
      state: null,
      postalCode: null,
      country: null,
    })
    const again = await call(admin, 'PUT', url, { name: 'Riverside' })
    expect(again.json().data.version).toBe(4)
  })

  it('refuses bad details, stale versions, other roles and other organizations', async () => {
    const { org, admin, url } = await practice()
    const badNpi = await call(admin, 'PUT', url, { ...DETAILS, npi: '1245319598' })
    expect(badNpi.statusCode).toBe(422)
    expect(badNpi.json().error.code).toBe('VAL_001')
    expect(badNpi.body).toContain('npi')
    const badPostalCode = await call(admin, 'PUT', url, { ...DETAILS, address: { postalCode: '!' } })
    expect(badPostalCode.json().success).toBe(false)
    expect([400, 422]).toContain(badPostalCode.statusCode)
    const unknown = await call(admin, 'PUT', url, { ...DETAILS, fax: '555' })
    expect([400, 422]).toContain(unknown.statusCode)
    const stale = await call(admin, 'PUT', url, DETAILS, { 'if-match': 'W/"7"' })
    expect(stale.statusCode).toBe(412)
    const nurse = await org.user('NURSE')
    expect((await call(nurse, 'PUT', url, DETAILS)).statusCode).toBe(403)
    const other = await practice()
    expect((await call(admin, 'GET', other.url)).statusCode).toBe(404)
    expect((await call(admin, 'PUT', other.url, DETAILS)).statusCode).toBe(404)
    const untouched = await call(other.admin, 'GET', other.url)
    expect(untouched.json().data.version).toBe(1)
  })

  it('makes the practice found by address in FHIR', async () => {
    const { org, admin, url } = await practice()
    await call(admin, 'PUT', url, DETAILS)
    const found = async (path: string) =>
      ((expectFhir(await fhirGet(app, admin, path)) as Bundle).entry ?? []).map((entry) => entry.resource?.id)
    expect(await found('/Organization?address=springf')).toEqual([String(org.id)])
    expect(await found('/Organization?address=62701')).toEqual([String(org.id)])
    expect(await found('/Location?address-city=Springfield')).toEqual([String(org.id)])
    expect(await found('/Location?address-state=il')).toEqual([String(org.id)])
    expect(await found('/Location?address-postalcode=627')).toEqual([String(org.id)])
    expect(await found('/Location?address-city=Shelbyville')).toEqual([])
  })
})
