import type { Bundle, Observation, OperationOutcome, Quantity } from '@medplum/fhirtypes'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { buildTestApp } from '../../helpers/app.js'
import { bearer, createPatient, newOrganization, type TestUser } from '../../helpers/factories.js'
import { expectFhir, fhirGet, matchIds, smartToken } from '../../helpers/fhir.js'
import { usCoreErrors } from '../../helpers/us-core.js'

let app: App

beforeAll(async () => {
  app = await buildTestApp()
})
afterAll(async () => {
  await app.close()
})

const LOINC = 'http://loinc.org'
const UCUM = 'http://unitsofmeasure.org'
const CATEGORY = 'http://terminology.hl7.org/CodeSystem/observation-category'
const US_CORE = 'http://hl7.org/fhir/us/core/StructureDefinition'

const get = (user: TestUser | string, path: string, headers: Record<string, string> = {}) =>
  fhirGet(app, user, path, headers)

const read = async (user: TestUser | string, id: number | string) => {
  const response = await get(user, `/Observation/${id}`)
  expect(response.statusCode).toBe(200)
  return expectFhir(response) as Observation
}

/** What each US Core vital-sign profile fixes: its LOINC code and the UCUM code of its value. */
const VITAL_PROFILES: Record<string, { code: string; unit?: string }> = {
  'us-core-heart-rate': { code: '8867-4', unit: '/min' },
  'us-core-respiratory-rate': { code: '9279-1', unit: '/min' },
  'us-core-body-temperature': { code: '8310-5', unit: 'Cel' },
  'us-core-body-height': { code: '8302-2', unit: 'cm' },
  'us-core-body-weight': { code: '29463-7', unit: 'kg' },
  'us-core-bmi': { code: '39156-5', unit: 'kg/m2' },
  'us-core-pulse-oximetry': { code: '59408-5', unit: '%' },
  'us-core-blood-pressure': { code: '85354-9' },
  'us-core-simple-observation': { code: '72514-3', unit: '{score}' },
}

const ucum = (quantity: Quantity | undefined, code: string) =>
  expect(quantity).toMatchObject({ system: UCUM, code, value: expect.any(Number) })

/** The measurements a panel's hasMember references, each read as its own Observation. */
async function membersOf(user: TestUser, panel: Observation): Promise<Observation[]> {
  return Promise.all(
    (panel.hasMember ?? []).map((member) => read(user, String(member.reference).replace('Observation/', ''))),
  )
}

/** A measurement by its LOINC code. */
const withCode = (members: Observation[], code: string) =>
  members.find((member) => member.code.coding?.some((coding) => coding.code === code))

/**
 * A vital-signs panel and its measurements against US Core 6.1.0 (0 errors for the profile each
 * claims), and what the validator does not check of them itself: the vital-signs category, the
 * fixed LOINC codes and the UCUM units. Answers the measurements.
 */
async function expectVitalSignsProfiles(user: TestUser, panel: Observation): Promise<Observation[]> {
  expect(panel.meta?.profile).toEqual([`${US_CORE}/us-core-vital-signs|6.1.0`])
  expect(usCoreErrors(panel, `${US_CORE}/us-core-vital-signs`)).toEqual([])
  expect(panel.contained).toBeUndefined()
  expect(panel.code.coding).toContainEqual(expect.objectContaining({ system: LOINC, code: '85353-1' }))
  const members = await membersOf(user, panel)
  for (const observation of [panel, ...members]) {
    expect(observation.category?.[0]?.coding).toContainEqual({
      system: CATEGORY,
      code: 'vital-signs',
      display: 'Vital Signs',
    })
    expect(observation.subject).toEqual(panel.subject)
    expect(observation.encounter).toEqual(panel.encounter)
    expect(observation.effectiveDateTime).toBe(panel.effectiveDateTime)
  }
  for (const member of members) {
    expect(member.meta?.versionId).toBeDefined()
    const [url] = member.meta?.profile ?? []
    const name = String(url).replace(`${US_CORE}/`, '').replace('|6.1.0', '')
    const fixed = VITAL_PROFILES[name]
    expect(fixed, String(url)).toBeDefined()
    expect(usCoreErrors(member, String(url)), String(url)).toEqual([])
    expect(member.code.coding).toContainEqual(expect.objectContaining({ system: LOINC, code: fixed?.code }))
    if (fixed?.unit) ucum(member.valueQuantity, fixed.unit)
    if (name === 'us-core-blood-pressure') {
      const parts = member.component ?? []
      expect(parts.map((part) => part.code.coding?.[0]?.code)).toEqual(['8480-6', '8462-4'])
      for (const part of parts) {
        expect(part.code.coding?.[0]?.system).toBe(LOINC)
        if (part.valueQuantity) ucum(part.valueQuantity, 'mm[Hg]')
        else expect(part.dataAbsentReason?.coding?.[0]?.code).toBe('unknown')
      }
    }
  }
  return members
}

/** The ids of the measurements a panel holds (its hasMember), in its order. */
async function memberIds(user: TestUser, id: number): Promise<number[]> {
  const panel = await read(user, id)
  return (panel.hasMember ?? []).map((member) => Number(String(member.reference).replace('Observation/', '')))
}

async function practice() {
  const org = await newOrganization(app)
  const provider = await org.user('PROVIDER')
  const nurse = await org.user('NURSE')
  return { org, provider, nurse }
}

async function post(user: TestUser, url: string, payload: object, status = 201) {
  const response = await app.inject({ method: 'POST', url, headers: bearer(user.token), payload })
  expect(response.statusCode, response.body).toBe(status)
  return response.json().data as { id: number }
}

const vitals = async (user: TestUser, patientId: number, body: object) =>
  (await post(user, `/api/patients/${patientId}/vitals`, body)).id
const lab = async (user: TestUser, patientId: number, body: object) =>
  (await post(user, `/api/patients/${patientId}/lab-results`, body)).id
const condition = async (user: TestUser, patientId: number) =>
  (
    await post(user, `/api/patients/${patientId}/conditions`, {
      icd10Code: 'E11.9',
      description: 'Type 2 diabetes mellitus',
    })
  ).id

const glucose = {
  testCode: '2345-7',
  testName: 'Glucose [Mass/volume] in Serum or Plasma',
  value: 182,
  unit: 'mg/dL',
  referenceRange: { low: 70, high: 99 },
}

describe('GET /fhir/R4/Observation/{id} (vital signs)', () => {
  it('returns a record as a US Core vital signs panel whose hasMember references one valid Observation per measurement', async () => {
    const { nurse } = await practice()
    const patientId = await createPatient(app, nurse)
    const id = await vitals(nurse, patientId, {
      recordedAt: '2024-02-03T09:30:00Z',
      systolic: 128,
      diastolic: 82,
      heartRate: 71,
      respiratoryRate: 16,
      temperature: { value: 98.6, unit: 'F' },
      spo2: 97,
      heightCm: 180,
      weightKg: 81,
      painScore: 3,
    })
    const response = await get(nurse, `/Observation/${id}`)
    expect(response.statusCode).toBe(200)
    expect(response.headers.etag).toBe('W/"1"')
    const panel = expectFhir(response) as Observation
    expect(panel).toMatchObject({
      resourceType: 'Observation',
      id: String(id),
      meta: { versionId: '1' },
      status: 'final',
      subject: { reference: `Patient/${patientId}` },
      effectiveDateTime: '2024-02-03T09:30:00.000Z',
    })
    const members = await expectVitalSignsProfiles(nurse, panel)
    const values = Object.fromEntries(
      members.map((member) => [member.code.coding?.[0]?.code, member.valueQuantity?.value]),
    )
    expect(values).toEqual({
      '85354-9': undefined,
      '8867-4': 71,
      '9279-1': 16,
      '8310-5': 37,
      '59408-5': 97,
      '8302-2': 180,
      '29463-7': 81,
      '39156-5': 25,
      '72514-3': 3,
    })
    for (const member of members) {
      expect(member).toMatchObject({ status: 'final', meta: { versionId: '1' } })
      expect(Number(member.id)).toBeGreaterThan(id)
    }
    expect(withCode(members, '85354-9')?.component?.map((part) => part.valueQuantity?.value)).toEqual([
      128, 82,
    ])
    expect(withCode(members, '59408-5')?.code.coding?.map((coding) => coding.code)).toEqual([
      '59408-5',
      '2708-6',
    ])
    expect((await get(nurse, `/Observation/${id}`, { 'if-none-match': 'W/"1"' })).statusCode).toBe(304)
    // A measurement is no REST record of its own.
    const member = await app.inject({
      url: `/api/patients/${patientId}/vitals/${members[0]?.id}`,
      headers: bearer(nurse.token),
    })
    expect(member.statusCode).toBe(404)
  })

  it('holds only what was measured; a blood pressure without its diastolic says it is absent', async () => {
    const { nurse } = await practice()
    const patientId = await createPatient(app, nurse)
    const pulse = await read(nurse, await vitals(nurse, patientId, { heartRate: 88 }))
    const [heartRate] = await expectVitalSignsProfiles(nurse, pulse)
    expect(pulse.hasMember).toHaveLength(1)
    expect(heartRate?.code.coding?.[0]?.code).toBe('8867-4')
    expect(pulse.encounter).toBeUndefined()
    const systolicOnly = await read(nurse, await vitals(nurse, patientId, { systolic: 140 }))
    const [pressure] = await expectVitalSignsProfiles(nurse, systolicOnly)
    const [systolic, diastolic] = pressure?.component ?? []
    expect(systolic?.valueQuantity?.value).toBe(140)
    expect(diastolic?.valueQuantity).toBeUndefined()
    expect(diastolic?.dataAbsentReason).toBeDefined()
    const heightOnly = await read(nurse, await vitals(nurse, patientId, { heightCm: 150.5 }))
    const heights = await expectVitalSignsProfiles(nurse, heightOnly)
    expect(heights.map((member) => member.valueQuantity?.value)).toEqual([150.5])
  })

  it('shows a correction as amended at the next version, a measurement removed and a withdrawn record as entered-in-error', async () => {
    const { nurse } = await practice()
    const patientId = await createPatient(app, nurse)
    const recordedAt = '2024-01-01T10:00:00Z'
    const id = await vitals(nurse, patientId, {
      recordedAt,
      heartRate: 70,
      respiratoryRate: 14,
      weightKg: 60,
    })
    const [heartRateId, respiratoryRateId, weightId] = await memberIds(nurse, id)
    const url = `/api/patients/${patientId}/vitals/${id}`
    const put = await app.inject({
      method: 'PUT',
      url,
      headers: bearer(nurse.token),
      payload: { recordedAt, heartRate: 72, weightKg: 60 },
    })
    expect(put.statusCode).toBe(200)
    const amended = await read(nurse, id)
    expect(amended).toMatchObject({ status: 'amended', meta: { versionId: '2' } })
    const members = await expectVitalSignsProfiles(nurse, amended)
    expect(members.map((member) => Number(member.id))).toEqual([heartRateId, weightId])
    // Only the measurement that changed is amended; the one left out is withdrawn.
    expect(withCode(members, '8867-4')).toMatchObject({
      status: 'amended',
      valueQuantity: { value: 72 },
      meta: { versionId: '2' },
    })
    expect(withCode(members, '29463-7')).toMatchObject({ status: 'final', meta: { versionId: '1' } })
    expect(await read(nurse, Number(respiratoryRateId))).toMatchObject({
      status: 'entered-in-error',
      meta: { versionId: '2' },
      valueQuantity: { value: 14 },
    })
    expect((await get(nurse, `/Observation/${id}/_history/2`)).statusCode).toBe(200)
    // The versions replaced are kept, as they were: the panel's and its measurements'.
    const first = await get(nurse, `/Observation/${id}/_history/1`)
    expect(first.statusCode).toBe(200)
    expect((first.json() as Observation).hasMember).toHaveLength(3)
    const firstHeartRate = await get(nurse, `/Observation/${heartRateId}/_history/1`)
    expect(firstHeartRate.json()).toMatchObject({ status: 'final', valueQuantity: { value: 70 } })
    const history = expectFhir(await get(nurse, `/Observation/${heartRateId}/_history`)) as Bundle
    expect(history.entry?.map((entry) => entry.resource?.meta?.versionId)).toEqual(['2', '1'])
    expect((await get(nurse, `/Observation/${id}/_history/4`)).statusCode).toBe(404)
    await post(nurse, `${url}/entered-in-error`, { reason: 'Wrong patient' }, 200)
    const withdrawn = await read(nurse, id)
    expect(withdrawn).toMatchObject({ status: 'entered-in-error', meta: { versionId: '3' } })
    for (const member of await expectVitalSignsProfiles(nurse, withdrawn)) {
      expect(member.status).toBe('entered-in-error')
    }
  })
})

describe('GET /fhir/R4/Observation/{id} (lab results)', () => {
  it('maps a numeric result with UCUM unit, range and computed interpretation', async () => {
    const { provider } = await practice()
    const patientId = await createPatient(app, provider)
    const id = await lab(provider, patientId, {
      ...glucose,
      specimenCollectedAt: '2024-01-10T07:00:00Z',
      resultedAt: '2024-01-10T15:00:00Z',
    })
    const observation = await read(provider, id)
    expect(observation).toEqual({
      resourceType: 'Observation',
      id: String(id),
      meta: {
        versionId: '1',
        lastUpdated: expect.any(String),
        profile: ['http://hl7.org/fhir/us/core/StructureDefinition/us-core-observation-lab|6.1.0'],
      },
      status: 'final',
      category: [{ coding: [{ system: CATEGORY, code: 'laboratory', display: 'Laboratory' }] }],
      code: { coding: [{ system: LOINC, code: '2345-7' }], text: glucose.testName },
      subject: { reference: `Patient/${patientId}` },
      effectiveDateTime: '2024-01-10T07:00:00.000Z',
      issued: '2024-01-10T15:00:00.000Z',
      valueQuantity: { value: 182, unit: 'mg/dL', system: UCUM, code: 'mg/dL' },
      interpretation: [
        {
          coding: [
            {
              system: 'http://terminology.hl7.org/CodeSystem/v3-ObservationInterpretation',
              code: 'H',
              display: 'High',
            },
          ],
        },
      ],
      referenceRange: [
        {
          low: { value: 70, unit: 'mg/dL', system: UCUM, code: 'mg/dL' },
          high: { value: 99, unit: 'mg/dL', system: UCUM, code: 'mg/dL' },
        },
      ],
    })
  })

  it('maps text values, units not in UCUM syntax, text ranges, interpretations and preliminary results', async () => {
    const { provider } = await practice()
    const patientId = await createPatient(app, provider)
    const text = await read(
      provider,
      await lab(provider, patientId, {
        testCode: '5778-6',
        testName: 'Color of Urine',
        value: 'Yellow',
        resultedAt: '2024-01-11T10:00:00Z',
      }),
    )
    expect(text.valueString).toBe('Yellow')
    expect(text.valueQuantity).toBeUndefined()
    expect(text.referenceRange).toBeUndefined()
    expect(text.interpretation).toBeUndefined()
    expect(text.effectiveDateTime).toBe('2024-01-11T10:00:00.000Z')

    const unitless = await read(
      provider,
      await lab(provider, patientId, {
        testCode: '2345-7',
        testName: 'Glucose',
        value: 5,
        unit: 'x10 E3 per uL',
        referenceRange: { text: 'see lab' },
        interpretation: 'NORMAL',
        status: 'PRELIMINARY',
      }),
    )
    expect(unitless.valueQuantity).toEqual({ value: 5, unit: 'x10 E3 per uL' })
    expect(unitless.referenceRange).toEqual([{ text: 'see lab' }])
    expect(unitless.interpretation?.[0]?.coding?.[0]?.code).toBe('N')
    expect(unitless.status).toBe('preliminary')

    const interpretations: [object, string][] = [
      [{ value: 50 }, 'L'],
      [{ value: 80 }, 'N'],
      [{ value: 500, interpretation: 'CRITICAL' }, 'HH'],
      [{ value: 20, interpretation: 'CRITICAL' }, 'LL'],
      [{ value: 80, interpretation: 'CRITICAL' }, 'AA'],
    ]
    for (const [body, code] of interpretations) {
      const observation = await read(provider, await lab(provider, patientId, { ...glucose, ...body }))
      expect(observation.interpretation?.[0]?.coding?.[0]?.code, JSON.stringify(body)).toBe(code)
    }
    const noUnit = await read(provider, await lab(provider, patientId, { ...glucose, unit: undefined }))
    expect(noUnit.valueQuantity).toEqual({ value: 182 })
    expect(noUnit.referenceRange).toEqual([{ low: { value: 70 }, high: { value: 99 } }])
  })

  it('shows a corrected final result as corrected, and a withdrawn one as entered-in-error', async () => {
    const { provider } = await practice()
    const patientId = await createPatient(app, provider)
    const id = await lab(provider, patientId, glucose)
    const url = `/api/patients/${patientId}/lab-results/${id}`
    const put = await app.inject({
      method: 'PUT',
      url,
      headers: bearer(provider.token),
      payload: { ...glucose, value: 120 },
    })
    expect(put.statusCode).toBe(200)
    expect(await read(provider, id)).toMatchObject({
      status: 'corrected',
      meta: { versionId: '2' },
      valueQuantity: { value: 120 },
    })
    await post(provider, `${url}/entered-in-error`, { reason: 'Wrong specimen' }, 200)
    expect(await read(provider, id)).toMatchObject({ status: 'entered-in-error', meta: { versionId: '3' } })
  })
})

describe('GET /fhir/R4/Observation/{id} (errors)', () => {
  it('answers 404 for none or another kind of record, 403 for another organization’s', async () => {
    const { provider } = await practice()
    const other = await practice()
    const patientId = await createPatient(app, provider)
    const conditionId = await condition(provider, patientId)
    const foreignPatient = await createPatient(app, other.provider)
    const foreignVitals = await vitals(other.provider, foreignPatient, { heartRate: 60 })
    const foreignCondition = await condition(other.provider, foreignPatient)
    const cases: [string, number, string][] = [
      ['/Observation/2000000000', 404, 'not-found'],
      ['/Observation/abc', 404, 'not-found'],
      [`/Observation/${conditionId}`, 404, 'not-found'],
      [`/Observation/${foreignCondition}`, 404, 'not-found'],
      [`/Observation/${foreignVitals}`, 403, 'forbidden'],
    ]
    for (const [path, status, code] of cases) {
      const response = await get(provider, path)
      expect(response.statusCode, path).toBe(status)
      expect((expectFhir(response) as OperationOutcome).issue?.[0]?.code, path).toBe(code)
    }
  })

  it('answers 404 for the records of a deleted patient, and leaves them out of searches', async () => {
    const { org, provider } = await practice()
    const admin = await org.user('ADMIN')
    const patientId = await createPatient(app, provider)
    const id = await vitals(provider, patientId, { heartRate: 60 })
    const removed = await app.inject({
      method: 'DELETE',
      url: `/api/patients/${patientId}`,
      headers: bearer(admin.token),
    })
    expect(removed.statusCode).toBe(200)
    expect((await get(provider, `/Observation/${id}`)).statusCode).toBe(404)
    const bundle = expectFhir(await get(provider, '/Observation')) as Bundle
    expect(bundle.entry).toBeUndefined()
  })

  it('refuses roles the REST vital signs routes refuse', async () => {
    const { org, provider, nurse } = await practice()
    const patientId = await createPatient(app, provider)
    const id = await lab(provider, patientId, glucose)
    expect((await get(nurse, `/Observation/${id}`)).statusCode).toBe(200)
    expect((await get(nurse, '/Observation')).statusCode).toBe(200)
    for (const role of ['FRONT_DESK', 'BILLING', 'ADMIN'] as const) {
      const user = await org.user(role)
      for (const path of [`/Observation/${id}`, '/Observation']) {
        const response = await get(user, path)
        expect(response.statusCode, `${role} ${path}`).toBe(403)
        expectFhir(response)
      }
    }
  })
})

describe('GET /fhir/R4/Observation (search)', () => {
  async function records() {
    const { org, provider, nurse } = await practice()
    const ada = await createPatient(app, provider)
    const alan = await createPatient(app, provider)
    const adaVitals = await vitals(nurse, ada, {
      recordedAt: '2020-05-10T08:00:00Z',
      heartRate: 70,
      systolic: 120,
    })
    // Ids of the measurements follow their panel's, in its order.
    const [adaPressure, adaHeartRate] = await memberIds(nurse, adaVitals)
    const adaGlucose = await lab(provider, ada, {
      ...glucose,
      specimenCollectedAt: '2021-02-28T09:00:00Z',
      resultedAt: '2021-03-01T12:00:00Z',
    })
    const alanVitals = await vitals(nurse, alan, { recordedAt: '2022-01-01T00:00:00Z', weightKg: 70 })
    const [alanWeight] = await memberIds(nurse, alanVitals)
    const alanUrine = await lab(provider, alan, {
      testCode: '5778-6',
      testName: 'Color of Urine',
      value: 'Yellow',
      resultedAt: '2023-06-01T00:00:00Z',
    })
    // In id order.
    const ids = {
      adaVitals,
      adaPressure: adaPressure as number,
      adaHeartRate: adaHeartRate as number,
      adaGlucose,
      alanVitals,
      alanWeight: alanWeight as number,
      alanUrine,
    }
    await condition(provider, ada)
    return { org, provider, nurse, ada, alan, ids }
  }

  it('finds by patient, subject, category, code, date with prefixes, status, _lastUpdated and _id', async () => {
    const { nurse, ada, alan, ids } = await records()
    const all = Object.values(ids)
    const adaVitals = [ids.adaVitals, ids.adaPressure, ids.adaHeartRate]
    const alanVitals = [ids.alanVitals, ids.alanWeight]
    const cases: [string, number[]][] = [
      ['', all],
      [`patient=${ada}`, [...adaVitals, ids.adaGlucose]],
      [`patient=Patient/${alan}`, [...alanVitals, ids.alanUrine]],
      [`subject=Patient/${alan}`, [...alanVitals, ids.alanUrine]],
      [`patient=Practitioner/${alan}`, []],
      ['category=vital-signs', [...adaVitals, ...alanVitals]],
      [`category=${CATEGORY}|laboratory`, [ids.adaGlucose, ids.alanUrine]],
      ['category=vital-signs,laboratory', all],
      ['category=http://other.example|laboratory', []],
      [`code=${LOINC}|2345-7`, [ids.adaGlucose]],
      ['code=5778-6,2345-7', [ids.adaGlucose, ids.alanUrine]],
      ['code=http://snomed.info/sct|2345-7', []],
      ['code=85353-1', [ids.adaVitals, ids.alanVitals]],
      ['code=8867-4', [ids.adaHeartRate]],
      [`code=${LOINC}|8867-4&patient=${ada}`, [ids.adaHeartRate]],
      [`code=8867-4&patient=${alan}`, []],
      ['code=85354-9', [ids.adaPressure]],
      ['code=8480-6', []],
      ['code=29463-7,2345-7', [ids.adaGlucose, ids.alanWeight]],
      ['code=85353-1,29463-7', [ids.adaVitals, ids.alanVitals, ids.alanWeight]],
      ['code=constructor', []],
      ['date=2020-05-10', adaVitals],
      ['date=2021-02-28', [ids.adaGlucose]],
      ['date=2021-03-01', []],
      ['date=ge2021', [ids.adaGlucose, ...alanVitals, ids.alanUrine]],
      ['date=lt2021-01-01', adaVitals],
      ['date=le2020-05-10T08:00:00Z', adaVitals],
      ['date=gt2022-01-01T00:00:00Z', [ids.alanUrine]],
      ['date=ne2022', [...adaVitals, ids.adaGlucose, ids.alanUrine]],
      ['date=ge2021&date=lt2023', [ids.adaGlucose, ...alanVitals]],
      ['status=final', all],
      [`_id=${ids.adaHeartRate}`, [ids.adaHeartRate]],
      [`_sort=-date&code=8867-4,29463-7`, [ids.alanWeight, ids.adaHeartRate]],
      ['status=amended,entered-in-error', []],
      ['_lastUpdated=ge2000-01-01&category=laboratory', [ids.adaGlucose, ids.alanUrine]],
      ['_lastUpdated=lt2000-01-01', []],
      [`_id=${ids.adaGlucose},${ids.alanUrine}`, [ids.adaGlucose, ids.alanUrine]],
      ['_id=abc', []],
    ]
    for (const [query, expected] of cases) {
      const response = await get(nurse, `/Observation?${query}`)
      expect(response.statusCode, query).toBe(200)
      const bundle = expectFhir(response) as Bundle
      expect(matchIds(bundle), query).toEqual(expected)
    }
    expect((await get(nurse, '/Observation?date=yesterday')).statusCode).toBe(400)
  })

  it('finds corrected and withdrawn records by status, each mapped validly', async () => {
    const { provider, nurse, ada, ids } = await records()
    await app.inject({
      method: 'PUT',
      url: `/api/patients/${ada}/lab-results/${ids.adaGlucose}`,
      headers: bearer(provider.token),
      payload: { ...glucose, value: 100 },
    })
    await post(
      nurse,
      `/api/patients/${ada}/vitals/${ids.adaVitals}/entered-in-error`,
      { reason: 'Wrong' },
      200,
    )
    const cases: [string, number[]][] = [
      ['status=corrected', [ids.adaGlucose]],
      ['status=entered-in-error', [ids.adaVitals, ids.adaPressure, ids.adaHeartRate]],
      ['status=final', [ids.alanVitals, ids.alanWeight, ids.alanUrine]],
    ]
    for (const [query, expected] of cases) {
      expect(matchIds(expectFhir(await get(nurse, `/Observation?${query}`)) as Bundle), query).toEqual(
        expected,
      )
    }
  })

  it('pages with next links to the end, and counts with _summary=count', async () => {
    const { nurse, ids } = await records()
    const seen: number[] = []
    let url: string | undefined = '/fhir/R4/Observation?_count=3'
    for (let page = 0; url && page < 10; page++) {
      const bundle = expectFhir(await app.inject({ url, headers: bearer(nurse.token) })) as Bundle
      seen.push(...matchIds(bundle))
      const next = bundle.link?.find((link) => link.relation === 'next')?.url
      url = next ? next.slice(next.indexOf('/fhir/R4')) : undefined
    }
    expect(seen).toEqual(Object.values(ids))
    const counted = expectFhir(await get(nurse, '/Observation?_summary=count&category=laboratory')) as Bundle
    expect(counted.total).toBe(2)
    expect(counted.entry).toBeUndefined()
  })

  it('never returns another organization’s observations', async () => {
    const mine = await records()
    await records()
    const bundle = expectFhir(await get(mine.nurse, '/Observation?_count=100')) as Bundle
    expect(matchIds(bundle)).toEqual(Object.values(mine.ids))
  })

  it('audits vital signs and lab results each as their own REST reads and lists are audited', async () => {
    const { org, nurse, ada, ids } = await records()
    const audited = async (url: string) => {
      const response = await get(nurse, url)
      expect(response.statusCode).toBe(200)
      await app.auditLog.flush()
      const rows = await app.db
        .selectFrom('audit_log')
        .select(['action', 'resource_type', 'resource_ids'])
        .where('organization_id', '=', org.id)
        .where('request_id', '=', String(response.headers['x-request-id']))
        .execute()
      return rows.map((row) => `${row.action} ${row.resource_type} ${row.resource_ids.join(',')}`).sort()
    }
    expect(await audited(`/Observation/${ids.adaGlucose}`)).toEqual([`READ lab-result ${ids.adaGlucose}`])
    expect(await audited(`/Observation/${ids.adaVitals}`)).toEqual([`READ vital-signs ${ids.adaVitals}`])
    expect(await audited(`/Observation/${ids.adaHeartRate}`)).toEqual([
      `READ vital-signs ${ids.adaHeartRate}`,
    ])
    expect(await audited(`/Observation?patient=${ada}`)).toEqual([
      `LIST lab-result ${ids.adaGlucose}`,
      `LIST vital-signs ${[ids.adaVitals, ids.adaPressure, ids.adaHeartRate].join(',')}`,
    ])
  })

  it('keeps a patient/ token to its launch patient', async () => {
    const { org, nurse, ada, alan, ids } = await records()
    for (const scope of ['patient/Observation.rs', 'patient/*.read']) {
      const token = smartToken(app, org, nurse, [scope], ada)
      expect((await get(token, `/Observation/${ids.adaGlucose}`)).statusCode, scope).toBe(200)
      const foreign = await get(token, `/Observation/${ids.alanUrine}`)
      expect(foreign.statusCode, scope).toBe(403)
      expectFhir(foreign)
      const bundle = expectFhir(await get(token, '/Observation')) as Bundle
      expect(matchIds(bundle), scope).toEqual([
        ids.adaVitals,
        ids.adaPressure,
        ids.adaHeartRate,
        ids.adaGlucose,
      ])
      const asked = expectFhir(await get(token, `/Observation?patient=${alan}`)) as Bundle
      expect(matchIds(asked)).toEqual([])
    }
    const patientsOnly = smartToken(app, org, nurse, ['patient/Patient.rs'], ada)
    expect((await get(patientsOnly, `/Observation/${ids.adaGlucose}`)).statusCode).toBe(403)
  })

  it('keeps a granular category scope to its category in reads, searches, counts and _include', async () => {
    const { org, nurse, ada, alan, ids } = await records()
    for (const scope of [
      `patient/Observation.rs?category=${CATEGORY}|laboratory`,
      'patient/Observation.rs?category=laboratory',
      `patient/Observation.rs?category=${encodeURIComponent(`${CATEGORY}|laboratory`)}`,
    ]) {
      const token = smartToken(app, org, nurse, [scope, 'patient/Patient.rs'], ada)
      expect((await get(token, `/Observation/${ids.adaGlucose}`)).statusCode, scope).toBe(200)
      const vital = await get(token, `/Observation/${ids.adaVitals}`)
      expect(vital.statusCode, scope).toBe(403)
      expect((expectFhir(vital) as OperationOutcome).issue?.[0]?.diagnostics).toContain('category')
      expect((await get(token, `/Observation/${ids.alanUrine}`)).statusCode, scope).toBe(403)
      expect(matchIds(expectFhir(await get(token, '/Observation')) as Bundle), scope).toEqual([
        ids.adaGlucose,
      ])
      expect((await get(token, `/Observation/${ids.adaHeartRate}`)).statusCode, scope).toBe(403)
      for (const query of ['category=vital-signs', `code=85353-1`, 'code=8867-4']) {
        expect(matchIds(expectFhir(await get(token, `/Observation?${query}`)) as Bundle), query).toEqual([])
      }
      const counted = expectFhir(await get(token, '/Observation?_summary=count')) as Bundle
      expect(counted.total, scope).toBe(1)
    }
    // user/: every patient's lab results, and only the patients of those among the included.
    const labs = smartToken(app, org, nurse, ['user/Observation.rs?category=laboratory', 'user/Patient.rs'])
    const vitalsOnly = await createPatient(app, nurse)
    await vitals(nurse, vitalsOnly, { recordedAt: '2024-01-01T00:00:00Z', heartRate: 60 })
    const bundle = expectFhir(await get(labs, '/Observation?_include=Observation:patient')) as Bundle
    expect(matchIds(bundle)).toEqual([ids.adaGlucose, ids.alanUrine])
    const included = (bundle.entry ?? []).filter((entry) => entry.search?.mode === 'include')
    expect(included.map((entry) => Number(entry.resource?.id)).sort()).toEqual([ada, alan].sort())
    // Both categories granted by two scopes: both are read.
    const both = smartToken(app, org, nurse, [
      'user/Observation.rs?category=laboratory',
      'user/Observation.rs?category=vital-signs',
    ])
    expect((await get(both, `/Observation/${ids.adaVitals}`)).statusCode).toBe(200)
    expect(matchIds(expectFhir(await get(both, `/Observation?patient=${ada}`)) as Bundle)).toEqual([
      ids.adaVitals,
      ids.adaPressure,
      ids.adaHeartRate,
      ids.adaGlucose,
    ])
  })

  it('reads nothing with SMART scopes that do not parse, and never more than the ones that do', async () => {
    const { org, provider, ada, ids } = await records()
    for (const scopes of [
      ['patient/Observation.sr'],
      ['patient/Observation.'],
      ['patient/Observation.rs?code=2345-7'],
      ['patient/Observation.read?category=laboratory'],
      ['patient/*.rs?category=laboratory'],
      ['patient/Observation.rs?category=laboratory,vital-signs'],
      ['patient/Observation.write'],
      ['user/Observation.sr', 'user/Observation.rs?category=laboratory&status=final'],
    ]) {
      const token = smartToken(app, org, provider, scopes, ada)
      const read = await get(token, `/Observation/${ids.alanUrine}`)
      expect(read.statusCode, scopes.join(' ')).toBe(403)
      expectFhir(read)
      expect((await get(token, '/Observation')).statusCode, scopes.join(' ')).toBe(403)
      expect((await get(token, `/Patient/${ada}`)).statusCode, scopes.join(' ')).toBe(403)
    }
    const mixed = smartToken(app, org, provider, ['patient/Observation.sr', 'patient/Patient.rs'], ada)
    expect((await get(mixed, `/Patient/${ada}`)).statusCode).toBe(200)
    expect((await get(mixed, `/Observation/${ids.adaGlucose}`)).statusCode).toBe(403)
  })
})

describe('GET /fhir/R4/metadata', () => {
  it('lists Observation with its search parameters', async () => {
    const response = await app.inject({ url: '/fhir/R4/metadata' })
    const statement = expectFhir(response) as unknown as {
      rest: { resource: { type: string; searchParam: { name: string }[] }[] }[]
    }
    const observation = statement.rest[0]?.resource.find((resource) => resource.type === 'Observation')
    const names = observation?.searchParam.map((parameter) => parameter.name)
    expect(names).toEqual(
      expect.arrayContaining(['patient', 'category', 'code', 'date', '_lastUpdated', 'status']),
    )
    // Measurements are resources of their own: there are no contained ones to search.
    expect(names).not.toContain('_contained')
  })
})
