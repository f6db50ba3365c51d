import type { AllergyIntolerance, Condition, Encounter, Resource } from '@medplum/fhirtypes'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { buildTestApp } from '../../helpers/app.js'
import {
  bearer,
  createPatient,
  daysFromToday,
  newOrganization,
  type TestUser,
} from '../../helpers/factories.js'
import { expectFhir, fhirGet } from '../../helpers/fhir.js'
import { booked, type Clinic, newClinic } from '../../helpers/scheduling.js'
import { usCoreErrors } from '../../helpers/us-core.js'

// The clinical types as US Core 6.1.0: each claims its profile and meets it with 0 errors, with
// full and with minimal data, and a resource read and written back unchanged stays a no-op.

let app: App

beforeAll(async () => {
  app = await buildTestApp()
})
afterAll(async () => {
  await app.close()
})

const PROFILES = 'http://hl7.org/fhir/us/core/StructureDefinition'

async function practice() {
  const org = await newOrganization(app)
  const provider = await org.user('PROVIDER')
  const nurse = await org.user('NURSE')
  const patient = await createPatient(app, nurse)
  return { org, provider, nurse, patient }
}

async function post(user: TestUser, url: string, body: object): Promise<number> {
  const response = await app.inject({ method: 'POST', url, headers: bearer(user.token), payload: body })
  if (response.statusCode !== 201) throw new Error(`${url}: ${response.body}`)
  return response.json().data.id
}

async function read<R extends Resource>(user: TestUser, path: string): Promise<R> {
  const response = await fhirGet(app, user, path)
  expect(response.statusCode, response.body).toBe(200)
  return expectFhir(response) as R
}

async function withdraw(user: TestUser, url: string) {
  const response = await app.inject({
    method: 'POST',
    url: `${url}/entered-in-error`,
    headers: bearer(user.token),
    payload: { reason: 'Recorded for the wrong patient' },
  })
  expect(response.statusCode).toBe(200)
}

/** Writes the resource back as read: 200 with the same version. */
async function expectNoOpWrite(user: TestUser, resource: Resource) {
  const response = await app.inject({
    method: 'PUT',
    url: `/fhir/R4/${resource.resourceType}/${resource.id}`,
    headers: { ...bearer(user.token), 'content-type': 'application/fhir+json' },
    payload: resource,
  })
  expect(response.statusCode, response.body).toBe(200)
  expect((response.json() as Resource).meta?.versionId).toBe(resource.meta?.versionId)
}

describe('AllergyIntolerance (us-core-allergyintolerance)', () => {
  const profile = `${PROFILES}/us-core-allergyintolerance|6.1.0`

  it('claims the profile and meets it with full, minimal and withdrawn data; writes back as a no-op', async () => {
    const { provider, patient } = await practice()
    const allergies = `/api/patients/${patient}/allergies`
    const full = await post(provider, allergies, {
      substance: 'Penicillin',
      substanceCode: { system: 'RXNORM', code: '7980' },
      category: 'MEDICATION',
      criticality: 'HIGH',
      status: 'RESOLVED',
      onsetDate: '2010-05-06',
      reactions: [{ manifestation: 'Hives', severity: 'MODERATE' }, { manifestation: 'Wheezing' }],
    })
    const minimal = await post(provider, allergies, { substance: 'Peanuts', category: 'FOOD' })
    const withdrawn = await post(provider, allergies, { substance: 'Latex', category: 'ENVIRONMENT' })
    await withdraw(provider, `${allergies}/${withdrawn}`)
    for (const id of [full, minimal, withdrawn]) {
      const allergy = await read<AllergyIntolerance>(provider, `/AllergyIntolerance/${id}`)
      expect(allergy.meta?.profile).toEqual([profile])
      expect(usCoreErrors(allergy, profile), String(id)).toEqual([])
      if (id !== withdrawn) await expectNoOpWrite(provider, allergy)
    }
    const minimalRead = await read<AllergyIntolerance>(provider, `/AllergyIntolerance/${minimal}`)
    expect(minimalRead.code).toEqual({ text: 'Peanuts' })
  })
})

describe('Condition (us-core-condition-problems-health-concerns)', () => {
  const profile = `${PROFILES}/us-core-condition-problems-health-concerns|6.1.0`

  it('claims the profile and meets it with full, minimal and withdrawn data; writes back as a no-op', async () => {
    const { provider, patient } = await practice()
    const conditions = `/api/patients/${patient}/conditions`
    const full = await post(provider, conditions, {
      icd10Code: 'E11.9',
      description: 'Type 2 diabetes mellitus without complications',
      clinicalStatus: 'RESOLVED',
      verificationStatus: 'CONFIRMED',
      onsetDate: '2019-04-01',
      abatementDate: '2021-02-03',
      severity: 'MODERATE',
      note: 'Diet controlled',
    })
    const minimal = await post(provider, conditions, {
      icd10Code: 'I10',
      description: 'Essential hypertension',
    })
    const withdrawn = await post(provider, conditions, { icd10Code: 'J45.909', description: 'Asthma' })
    await withdraw(provider, `${conditions}/${withdrawn}`)
    for (const id of [full, minimal, withdrawn]) {
      const condition = await read<Condition>(provider, `/Condition/${id}`)
      expect(condition.meta?.profile).toEqual([profile])
      expect(condition.category).toEqual([
        {
          coding: [
            {
              system: 'http://terminology.hl7.org/CodeSystem/condition-category',
              code: 'problem-list-item',
              display: 'Problem List Item',
            },
          ],
        },
      ])
      expect(usCoreErrors(condition, profile), String(id)).toEqual([])
      if (id !== withdrawn) await expectNoOpWrite(provider, condition)
    }
  })
})

describe('Encounter (us-core-encounter)', () => {
  const profile = `${PROFILES}/us-core-encounter|6.1.0`

  async function note(clinic: Clinic, body: object): Promise<number> {
    const payload = { patientId: clinic.patient.id, providerId: clinic.provider.id, ...body }
    return post(clinic.doctor, '/api/encounters', payload)
  }

  it('claims the profile and meets it with full and minimal data; writes back as a no-op', async () => {
    const clinic = await newClinic(app)
    const appointment = await booked(app, clinic, daysFromToday(2), '10:00:00')
    const full = await note(clinic, {
      encounterDate: '2024-03-15',
      encounterType: 'TELEHEALTH',
      chiefComplaint: 'Headache',
      appointmentId: appointment.id,
      soapNote: { subjective: 'Headache for three days', plan: 'Ibuprofen as needed' },
    })
    const signed = await app.inject({
      method: 'POST',
      url: `/api/encounters/${full}/sign`,
      headers: bearer(clinic.doctor.token),
    })
    expect(signed.statusCode, signed.body).toBe(200)
    const minimal = await note(clinic, { encounterDate: '2024-03-16', encounterType: 'OFFICE_VISIT' })
    for (const id of [full, minimal]) {
      const encounter = await read<Encounter>(clinic.doctor, `/Encounter/${id}`)
      expect(encounter.meta?.profile).toEqual([profile])
      expect(encounter.location).toEqual([{ location: { reference: `Location/${clinic.org.id}` } }])
      expect(encounter.serviceProvider).toEqual({ reference: `Organization/${clinic.org.id}` })
      expect(encounter.hospitalization).toBeUndefined()
      expect(usCoreErrors(encounter, profile), String(id)).toEqual([])
      await expectNoOpWrite(clinic.doctor, encounter)
    }
    const minimalRead = await read<Encounter>(clinic.doctor, `/Encounter/${minimal}`)
    expect(minimalRead.reasonCode).toBeUndefined()
    expect(minimalRead.status).toBe('in-progress')
  })

  it('creates from a resource naming the practice as serviceProvider and location, and refuses another’s', async () => {
    const clinic = await newClinic(app)
    const other = await newClinic(app)
    const encounter = (organization: number): Encounter => ({
      resourceType: 'Encounter',
      meta: { profile: [profile.split('|')[0] as string] },
      status: 'in-progress',
      class: { system: 'http://terminology.hl7.org/CodeSystem/v3-ActCode', code: 'AMB' },
      subject: { reference: `Patient/${clinic.patient.id}` },
      participant: [{ individual: { reference: `Practitioner/${clinic.provider.id}` } }],
      period: { start: '2024-04-01' },
      location: [{ location: { reference: `Location/${organization}` } }],
      serviceProvider: { reference: `Organization/${organization}` },
    })
    const create = (resource: Encounter) =>
      app.inject({
        method: 'POST',
        url: '/fhir/R4/Encounter',
        headers: { ...bearer(clinic.doctor.token), 'content-type': 'application/fhir+json' },
        payload: resource,
      })
    const created = await create(encounter(clinic.org.id))
    expect(created.statusCode, created.body).toBe(201)
    const stored = created.json() as Encounter
    expect(stored.serviceProvider).toEqual({ reference: `Organization/${clinic.org.id}` })
    expect(usCoreErrors(stored, profile)).toEqual([])
    const refused = await create(encounter(other.org.id))
    expect(refused.statusCode).toBe(422)
    expect(refused.body).toContain('Encounter.serviceProvider')
    expect(refused.body).toContain('Encounter.location')
  })
})
