import type { Patient } from '@medplum/fhirtypes'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { buildTestApp } from '../../helpers/app.js'
import { bearer, createPatient, newOrganization, patientBody } from '../../helpers/factories.js'
import { expectFhir, fhirGet } from '../../helpers/fhir.js'
import { usCoreErrors } from '../../helpers/us-core.js'

let app: App

beforeAll(async () => {
  app = await buildTestApp()
})
afterAll(async () => {
  await app.close()
})

const PROFILE = 'http://hl7.org/fhir/us/core/StructureDefinition/us-core-patient'
const EXTENSION = 'http://hl7.org/fhir/us/core/StructureDefinition/us-core-'
const CDC = 'urn:oid:2.16.840.1.113883.6.238'

const cdc = (code: string, display: string) => ({ system: CDC, code, display })

const sent = (overrides: Partial<Patient> = {}): Patient => ({
  resourceType: 'Patient',
  meta: { profile: [PROFILE] },
  extension: [
    {
      url: `${EXTENSION}race`,
      extension: [
        { url: 'ombCategory', valueCoding: cdc('2054-5', 'Black or African American') },
        { url: 'detailed', valueCoding: cdc('2060-2', 'African') },
        { url: 'text', valueString: 'African' },
      ],
    },
    {
      url: `${EXTENSION}ethnicity`,
      extension: [
        { url: 'ombCategory', valueCoding: cdc('2186-5', 'Not Hispanic or Latino') },
        { url: 'text', valueString: 'Not Hispanic or Latino' },
      ],
    },
    { url: `${EXTENSION}birthsex`, valueCode: 'M' },
    {
      url: `${EXTENSION}genderIdentity`,
      valueCodeableConcept: { coding: [{ system: 'http://snomed.info/sct', code: '446151000124109' }] },
    },
  ],
  name: [{ use: 'official', family: 'Okafor', given: ['Chidi'] }],
  gender: 'male',
  birthDate: '1979-03-02',
  communication: [{ language: { coding: [{ system: 'urn:ietf:bcp:47', code: 'en' }] } }],
  ...overrides,
})

async function clerk() {
  const org = await newOrganization(app)
  return { org, user: await org.user('FRONT_DESK') }
}

const post = (token: string, resource: object) =>
  app.inject({
    method: 'POST',
    url: '/fhir/R4/Patient',
    headers: { ...bearer(token), 'content-type': 'application/fhir+json' },
    payload: resource,
  })

describe('GET /fhir/R4/Patient/{id} (US Core 6.1.0 Patient)', () => {
  it('claims us-core-patient and validates against it with 0 errors, with every demographic and with none', async () => {
    const { user } = await clerk()
    const full = await createPatient(
      app,
      user,
      patientBody({
        preferredLanguage: 'es',
        race: { categories: ['2106-3', '2028-9'], detailed: ['2108-9', '2036-2'] },
        ethnicity: { category: '2135-2', detailed: ['2148-5'], text: 'Mexican American' },
        birthSex: 'F',
        genderIdentity: '446141000124107',
      }),
    )
    const bare = await createPatient(app, user)
    for (const id of [full, bare]) {
      const patient = expectFhir(await fhirGet(app, user, `/Patient/${id}`)) as Patient
      expect(patient.meta?.profile).toEqual([`${PROFILE}|6.1.0`])
      expect(usCoreErrors(patient, `${PROFILE}|6.1.0`)).toEqual([])
    }
    const patient = expectFhir(await fhirGet(app, user, `/Patient/${full}`)) as Patient
    expect(patient.extension).toEqual([
      {
        url: `${EXTENSION}race`,
        extension: [
          { url: 'ombCategory', valueCoding: cdc('2106-3', 'White') },
          { url: 'ombCategory', valueCoding: cdc('2028-9', 'Asian') },
          { url: 'detailed', valueCoding: cdc('2108-9', 'European') },
          { url: 'detailed', valueCoding: cdc('2036-2', 'Filipino') },
          { url: 'text', valueString: 'White, Asian' },
        ],
      },
      {
        url: `${EXTENSION}ethnicity`,
        extension: [
          { url: 'ombCategory', valueCoding: cdc('2135-2', 'Hispanic or Latino') },
          { url: 'detailed', valueCoding: cdc('2148-5', 'Mexican') },
          { url: 'text', valueString: 'Mexican American' },
        ],
      },
      { url: `${EXTENSION}birthsex`, valueCode: 'F' },
      {
        url: `${EXTENSION}genderIdentity`,
        valueCodeableConcept: {
          coding: [
            {
              system: 'http://snomed.info/sct',
              code: '446141000124107',
              display: 'Identifies as female gender',
            },
          ],
        },
      },
    ])
    expect(patient.communication).toEqual([
      { language: { coding: [{ system: 'urn:ietf:bcp:47', code: 'es' }] } },
    ])
    const bareRead = expectFhir(await fhirGet(app, user, `/Patient/${bare}`)) as Patient
    expect(bareRead.extension).toBeUndefined()
  })
})

describe('POST and PUT /fhir/R4/Patient with US Core extensions', () => {
  it('stores each extension as the REST fields, reads back what was sent, and a write-back is no change', async () => {
    const { user } = await clerk()
    const created = await post(user.token, sent())
    expect(created.statusCode, created.body).toBe(201)
    const id = (created.json() as Patient).id
    const rest = await app.inject({ url: `/api/patients/${id}`, headers: bearer(user.token) })
    expect(rest.json().data).toMatchObject({
      race: { categories: ['2054-5'], detailed: ['2060-2'], text: 'African' },
      ethnicity: { category: '2186-5', detailed: [], text: null },
      birthSex: 'M',
      genderIdentity: '446151000124109',
      preferredLanguage: 'en',
    })
    const read = expectFhir(await fhirGet(app, user, `/Patient/${id}`)) as Patient
    expect(usCoreErrors(read, PROFILE)).toEqual([])
    expect(read.extension).toEqual(
      expect.arrayContaining([expect.objectContaining({ url: `${EXTENSION}race` })]),
    )
    const again = await app.inject({
      method: 'PUT',
      url: `/fhir/R4/Patient/${id}`,
      headers: { ...bearer(user.token), 'content-type': 'application/fhir+json', 'if-match': 'W/"1"' },
      payload: read,
    })
    expect(again.statusCode, again.body).toBe(200)
    expect((again.json() as Patient).meta?.versionId).toBe('1')
  })

  it.each([
    [
      'an unknown OMB race category',
      [
        { url: 'ombCategory', valueCoding: cdc('2108-9', 'European') },
        { url: 'text', valueString: 'x' },
      ],
      `Patient.extension('${EXTENSION}race')`,
    ],
    [
      'an unknown detailed race code',
      [
        { url: 'ombCategory', valueCoding: cdc('2106-3', 'White') },
        { url: 'detailed', valueCoding: cdc('9999-9', 'None') },
        { url: 'text', valueString: 'x' },
      ],
      `Patient.extension('${EXTENSION}race')`,
    ],
  ])('returns 422 naming the extension for %s', async (_label, parts, expression) => {
    const { user } = await clerk()
    const resource = sent({ extension: [{ url: `${EXTENSION}race`, extension: parts }] })
    const response = await post(user.token, resource)
    expect(response.statusCode, response.body).toBe(422)
    expect(response.json().resourceType).toBe('OperationOutcome')
    expect(JSON.stringify(response.json().issue)).toContain(expression)
  })

  it('returns 422 naming an extension it cannot store', async () => {
    const { user } = await clerk()
    const tribal = {
      url: `${EXTENSION}tribal-affiliation`,
      extension: [{ url: 'isEnrolled', valueBoolean: true }],
    }
    const response = await post(user.token, sent({ extension: [...(sent().extension ?? []), tribal] }))
    expect(response.statusCode, response.body).toBe(422)
    expect(response.json().issue).toEqual([expect.objectContaining({ expression: ['Patient.extension[4]'] })])
  })
})
