import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { buildTestApp } from '../../helpers/app.js'
import { bearer, createPatient, newOrganization, type TestUser } from '../../helpers/factories.js'

let app: App
let provider: TestUser
let nurse: TestUser

beforeAll(async () => {
  app = await buildTestApp()
  const org = await newOrganization(app)
  provider = await org.user('PROVIDER')
  nurse = await org.user('NURSE')
})
afterAll(async () => {
  await app.close()
})

const newPatient = () => createPatient(app, provider)

const post = (user: TestUser, url: string, payload: object) =>
  app.inject({ method: 'POST', url, headers: bearer(user.token), payload })
const get = (user: TestUser, url: string) => app.inject({ url, headers: bearer(user.token) })

describe('vital signs', () => {
  it('records, normalises °F to °C, computes BMI, and reads back', async () => {
    const patientId = await newPatient()
    const created = await post(nurse, `/api/patients/${patientId}/vitals`, {
      systolic: 120,
      diastolic: 80,
      temperature: { value: 98.6, unit: 'F' },
      heightCm: 180,
      weightKg: 81,
      painScore: 2,
    })
    expect(created.statusCode).toBe(201)
    const record = created.json().data
    expect(record).toMatchObject({
      patientId,
      status: 'FINAL',
      temperatureCelsius: 37,
      bmi: 25,
      heartRate: null,
      recordedBy: nurse.id,
      version: 1,
      enteredInError: null,
    })
    const read = await get(provider, `/api/patients/${patientId}/vitals/${record.id}`)
    expect(read.json().data).toEqual(record)
  })

  it.each([
    [{}, 'vitals need at least one measurement'],
    [{ systolic: 301 }, 'systolic'],
    [{ systolic: 49 }, 'systolic'],
    [{ diastolic: 19 }, 'diastolic'],
    [{ diastolic: 201 }, 'diastolic'],
    [{ heartRate: 19 }, 'heartRate'],
    [{ heartRate: 301 }, 'heartRate'],
    [{ respiratoryRate: 3 }, 'respiratoryRate'],
    [{ respiratoryRate: 81 }, 'respiratoryRate'],
    [{ heightCm: 19 }, 'heightCm'],
    [{ heightCm: 273 }, 'heightCm'],
    [{ weightKg: 0.1 }, 'weightKg'],
    [{ weightKg: 651 }, 'weightKg'],
    [{ temperature: { value: 24, unit: 'C' } }, 'temperature.value'],
    [{ spo2: 49 }, 'spo2'],
    [{ painScore: -1 }, 'painScore'],
    [{ heartRate: 72.5 }, 'heartRate'],
    [{ systolic: 120, diastolic: 130 }, 'diastolic must be below systolic'],
    [{ temperature: { value: 50, unit: 'C' } }, 'temperature.value'],
    [{ temperature: { value: 120, unit: 'F' } }, 'temperature.value'],
    [{ spo2: 101 }, 'spo2'],
    [{ painScore: 11 }, 'painScore'],
    [{ heartRate: 72, recordedAt: '2999-01-01T00:00:00Z' }, 'recordedAt must not be in the future'],
  ])('answers 422 naming the field for %o', async (body, details) => {
    const response = await post(nurse, `/api/patients/${await newPatient()}/vitals`, body)
    expect(response.statusCode).toBe(422)
    expect(response.json().error.details).toContain(details)
    expect(response.json().error.fields).toEqual([{ path: expect.any(String), message: expect.any(String) }])
  })
})

describe('lab results', () => {
  it('checks the LOINC check digit and computes the interpretation from the range', async () => {
    const patientId = await newPatient()
    const url = `/api/patients/${patientId}/lab-results`
    const high = await post(provider, url, {
      testCode: '2345-7',
      testName: 'Glucose',
      value: 182,
      unit: 'mg/dL',
      referenceRange: { low: 70, high: 99 },
    })
    expect(high.statusCode).toBe(201)
    expect(high.json().data).toMatchObject({ interpretation: 'HIGH', status: 'FINAL' })
    const low = await post(provider, url, {
      testCode: '718-7',
      testName: 'Hemoglobin',
      value: 9.1,
      referenceRange: { low: 12, high: 16 },
    })
    expect(low.json().data.interpretation).toBe('LOW')
    const text = await post(provider, url, {
      testCode: '5778-6',
      testName: 'Color of Urine',
      value: 'Yellow',
    })
    expect(text.json().data).toMatchObject({ value: 'Yellow', interpretation: null })

    const wrongDigit = await post(provider, url, { testCode: '2345-8', testName: 'Glucose', value: 1 })
    expect(wrongDigit.statusCode).toBe(422)
    expect(wrongDigit.json().error.details).toBe('testCode has a wrong LOINC check digit')
    const badFormat = await post(provider, url, { testCode: 'GLU', testName: 'Glucose', value: 1 })
    expect(badFormat.statusCode).toBe(422)
    const backwards = await post(provider, url, {
      testCode: '2345-7',
      testName: 'Glucose',
      value: 1,
      specimenCollectedAt: '2026-01-02T00:00:00Z',
      resultedAt: '2026-01-01T00:00:00Z',
    })
    expect(backwards.json().error.details).toBe('resultedAt must not be before specimenCollectedAt')

    const filtered = await get(provider, `${url}?testCode=718-7`)
    expect(filtered.json().data.content.map((r: { testName: string }) => r.testName)).toEqual(['Hemoglobin'])
  })

  it('a correction of a final result makes it CORRECTED and bumps the version', async () => {
    const patientId = await newPatient()
    const url = `/api/patients/${patientId}/lab-results`
    const { id } = (await post(provider, url, { testCode: '2345-7', testName: 'Glucose', value: 300 })).json()
      .data
    const corrected = await app.inject({
      method: 'PUT',
      url: `${url}/${id}`,
      headers: bearer(provider.token),
      payload: { testCode: '2345-7', testName: 'Glucose', value: 130, status: 'FINAL' },
    })
    expect(corrected.statusCode).toBe(200)
    expect(corrected.json().data).toMatchObject({ id, value: 130, status: 'CORRECTED', version: 2 })
  })
})

describe('conditions', () => {
  it('checks ICD-10-CM format and date order, and filters by clinical status', async () => {
    const patientId = await newPatient()
    const url = `/api/patients/${patientId}/conditions`
    const active = await post(provider, url, {
      icd10Code: 'E11.9',
      description: 'Type 2 diabetes',
      onsetDate: '2019-04-01',
    })
    expect(active.statusCode).toBe(201)
    expect(active.json().data).toMatchObject({ clinicalStatus: 'ACTIVE', verificationStatus: 'CONFIRMED' })
    await post(provider, url, {
      icd10Code: 'J06.9',
      description: 'URI',
      clinicalStatus: 'RESOLVED',
      onsetDate: '2024-01-01',
      abatementDate: '2024-01-10',
    })

    const badCode = await post(provider, url, { icd10Code: 'U07', description: 'x' })
    expect(badCode.statusCode).toBe(422)
    expect(badCode.json().error.details).toContain('icd10Code')
    const backwards = await post(provider, url, {
      icd10Code: 'I10',
      description: 'Hypertension',
      onsetDate: '2020-05-01',
      abatementDate: '2020-04-01',
    })
    expect(backwards.json().error.details).toBe('abatementDate must not be before onsetDate')

    const list = await get(provider, `${url}?clinicalStatus=ACTIVE`)
    expect(list.json().data.content.map((c: { icd10Code: string }) => c.icd10Code)).toEqual(['E11.9'])
  })
})

describe('allergies', () => {
  it('refuses a second ACTIVE allergy to the same substance with 409, whatever its spelling', async () => {
    const patientId = await newPatient()
    const url = `/api/patients/${patientId}/allergies`
    const first = await post(provider, url, {
      substance: 'Penicillin',
      category: 'MEDICATION',
      reactions: [{ manifestation: 'Hives' }],
    })
    expect(first.statusCode).toBe(201)
    expect(first.json().data).toMatchObject({
      status: 'ACTIVE',
      reactions: [{ manifestation: 'Hives', severity: null }],
    })
    const duplicate = await post(provider, url, { substance: '  penicillin ', category: 'MEDICATION' })
    expect(duplicate.statusCode).toBe(409)
    expect(duplicate.json().error).toEqual({
      code: 'RES_002',
      details: 'The patient already has an ACTIVE allergy to this substance',
    })
    const inactive = await post(provider, url, {
      substance: 'Penicillin',
      category: 'MEDICATION',
      status: 'RESOLVED',
    })
    expect(inactive.statusCode).toBe(201)

    await post(provider, `${url}/${first.json().data.id}/entered-in-error`, { reason: 'Wrong patient' })
    const again = await post(provider, url, { substance: 'Penicillin', category: 'MEDICATION' })
    expect(again.statusCode).toBe(201)
  })
})

describe('medications', () => {
  it('records a medication and checks start and end dates and dose with unit', async () => {
    const patientId = await newPatient()
    const url = `/api/patients/${patientId}/medications`
    const created = await post(provider, url, {
      name: 'Metformin 500 mg tablet',
      rxnormCode: '861007',
      dose: 500,
      doseUnit: 'mg',
      route: 'ORAL',
      frequency: 'twice daily',
      startDate: '2025-01-01',
    })
    expect(created.statusCode).toBe(201)
    expect(created.json().data).toMatchObject({ status: 'ACTIVE', route: 'ORAL', endDate: null })
    const backwards = await post(provider, url, { name: 'X', startDate: '2025-02-01', endDate: '2025-01-01' })
    expect(backwards.json().error.details).toBe('endDate must not be before startDate')
    const noUnit = await post(provider, url, { name: 'X', dose: 5 })
    expect(noUnit.statusCode).toBe(422)
    expect(noUnit.json().error.details).toBe('doseUnit and dose go together')
  })
})

describe('entered in error', () => {
  it('keeps the record with who and why, hides it from lists and refuses corrections', async () => {
    const patientId = await newPatient()
    const url = `/api/patients/${patientId}/vitals`
    const { id } = (await post(nurse, url, { heartRate: 80 })).json().data
    const withdrawn = await post(nurse, `${url}/${id}/entered-in-error`, {
      reason: 'Measured on the wrong patient',
    })
    expect(withdrawn.statusCode).toBe(200)
    expect(withdrawn.json().data).toMatchObject({
      status: 'ENTERED_IN_ERROR',
      enteredInError: { by: nurse.id, reason: 'Measured on the wrong patient' },
    })
    expect((await get(provider, url)).json().data.totalElements).toBe(0)
    const all = await get(provider, `${url}?includeEnteredInError=true`)
    expect(all.json().data.content[0].id).toBe(id)
    const again = await post(nurse, `${url}/${id}/entered-in-error`, { reason: 'again' })
    expect(again.statusCode).toBe(409)
    const correction = await app.inject({
      method: 'PUT',
      url: `${url}/${id}`,
      headers: bearer(nurse.token),
      payload: { heartRate: 81 },
    })
    expect(correction.statusCode).toBe(409)
    const missingReason = await post(nurse, `${url}/${id}/entered-in-error`, {})
    expect(missingReason.statusCode).toBe(422)
  })
})

describe('lists', () => {
  it('page newest first and filter by time range', async () => {
    const patientId = await newPatient()
    const url = `/api/patients/${patientId}/vitals`
    for (const [index, recordedAt] of [
      '2026-01-01T08:00:00Z',
      '2026-02-01T08:00:00Z',
      '2026-03-01T08:00:00Z',
    ].entries()) {
      expect((await post(nurse, url, { heartRate: 60 + index, recordedAt })).statusCode).toBe(201)
    }
    const page = (await get(provider, `${url}?size=2`)).json().data
    expect(page).toMatchObject({ totalElements: 3, totalPages: 2 })
    expect(page.content.map((v: { heartRate: number }) => v.heartRate)).toEqual([62, 61])
    const ranged = (await get(provider, `${url}?from=2026-01-15T00:00:00Z&to=2026-02-15T00:00:00Z`)).json()
      .data
    expect(ranged.content.map((v: { heartRate: number }) => v.heartRate)).toEqual([61])
    expect((await get(provider, `${url}?sort=recordedAt,sideways`)).statusCode).toBe(400)
  })
})

describe('GET /api/patients/{patientId}/chart', () => {
  it('shows the latest vitals, active problems, allergies, medications and recent labs', async () => {
    const patientId = await newPatient()
    const base = `/api/patients/${patientId}`
    await post(nurse, `${base}/vitals`, { heartRate: 70, recordedAt: '2026-01-01T00:00:00Z' })
    const latest = (await post(nurse, `${base}/vitals`, { heartRate: 75 })).json().data
    await post(provider, `${base}/conditions`, { icd10Code: 'I10', description: 'Hypertension' })
    await post(provider, `${base}/conditions`, {
      icd10Code: 'J06.9',
      description: 'URI',
      clinicalStatus: 'RESOLVED',
    })
    await post(provider, `${base}/allergies`, { substance: 'Latex', category: 'ENVIRONMENT' })
    await post(provider, `${base}/medications`, { name: 'Lisinopril', status: 'ACTIVE' })
    await post(provider, `${base}/medications`, { name: 'Amoxicillin', status: 'COMPLETED' })
    for (let i = 0; i < 12; i++)
      await post(provider, `${base}/lab-results`, {
        testCode: '2345-7',
        testName: `Glucose ${i}`,
        value: 90 + i,
      })

    const chart = (await get(provider, `${base}/chart`)).json().data
    expect(chart.latestVitals.id).toBe(latest.id)
    expect(chart.activeConditions.map((c: { icd10Code: string }) => c.icd10Code)).toEqual(['I10'])
    expect(chart.activeAllergies.map((a: { substance: string }) => a.substance)).toEqual(['Latex'])
    expect(chart.activeMedications.map((m: { name: string }) => m.name)).toEqual(['Lisinopril'])
    expect(chart.recentLabResults).toHaveLength(10)
    expect(chart.recentLabResults[0].testName).toBe('Glucose 11')
  })
})

describe('access', () => {
  it('lets NURSE write vitals but only PROVIDER write other kinds; both read', async () => {
    const patientId = await newPatient()
    expect(
      (await post(nurse, `/api/patients/${patientId}/conditions`, { icd10Code: 'I10', description: 'x' }))
        .statusCode,
    ).toBe(403)
    expect((await post(provider, `/api/patients/${patientId}/vitals`, { heartRate: 60 })).statusCode).toBe(
      201,
    )
    expect((await get(nurse, `/api/patients/${patientId}/vitals`)).statusCode).toBe(200)
    const clerk = await (await newOrganization(app)).user('FRONT_DESK')
    expect((await get(clerk, `/api/patients/${patientId}/vitals`)).statusCode).toBe(403)
  })

  it("answers 403 for another organization's patient on every kind, and 404 for a record of another patient", async () => {
    const patientId = await newPatient()
    const outsider = await (await newOrganization(app)).user('PROVIDER', 'NURSE')
    const { id } = (await post(nurse, `/api/patients/${patientId}/vitals`, { heartRate: 60 })).json().data
    for (const path of ['vitals', 'lab-results', 'conditions', 'allergies', 'medications']) {
      expect((await get(outsider, `/api/patients/${patientId}/${path}`)).statusCode, path).toBe(403)
    }
    expect((await get(outsider, `/api/patients/${patientId}/vitals/${id}`)).statusCode).toBe(403)
    expect((await post(outsider, `/api/patients/${patientId}/vitals`, { heartRate: 61 })).statusCode).toBe(
      403,
    )
    expect((await get(outsider, `/api/patients/${patientId}/chart`)).statusCode).toBe(403)
    const otherPatient = await newPatient()
    expect((await get(provider, `/api/patients/${otherPatient}/vitals/${id}`)).statusCode).toBe(404)
  })

  it('checks the patient before the record: 403 for another organization’s, 404 for a deleted one, nothing stored', async () => {
    const valid = { testCode: '2345-7', testName: 'Glucose', value: 90 }
    // A wrong LOINC check digit breaks the kind's rule, which answers only for a patient one may write for.
    const wrongDigit = { ...valid, testCode: '2345-8' }
    const foreign = await newPatient()
    const outsider = await (await newOrganization(app)).user('PROVIDER')
    for (const body of [valid, wrongDigit]) {
      expect((await post(outsider, `/api/patients/${foreign}/lab-results`, body)).statusCode).toBe(403)
    }
    const org = await newOrganization(app)
    const [writer, admin] = [await org.user('PROVIDER'), await org.user('ADMIN')]
    const deleted = await createPatient(app, writer)
    const removed = await app.inject({
      method: 'DELETE',
      url: `/api/patients/${deleted}`,
      headers: bearer(admin.token),
    })
    expect(removed.statusCode).toBe(200)
    for (const body of [valid, wrongDigit]) {
      expect((await post(writer, `/api/patients/${deleted}/lab-results`, body)).statusCode).toBe(404)
    }
    const stored = await app.db
      .selectFrom('clinical_records')
      .select('id')
      .where('patient_id', 'in', [foreign, deleted])
      .execute()
    expect(stored).toEqual([])
  })
})

describe.each([
  ['vitals', { heartRate: 70 }, { heartRate: 75 }, 'heartRate', 75, 'status=FINAL'],
  [
    'lab-results',
    { testCode: '2345-7', testName: 'Glucose', value: 95 },
    { testCode: '2345-7', testName: 'Glucose', value: 96 },
    'value',
    96,
    'testCode=2345-7',
  ],
  [
    'conditions',
    { icd10Code: 'I10', description: 'Hypertension' },
    { icd10Code: 'I10', description: 'Essential hypertension' },
    'description',
    'Essential hypertension',
    'icd10Code=I10',
  ],
  [
    'allergies',
    { substance: 'Peanut', category: 'FOOD' },
    { substance: 'Peanut', category: 'FOOD', severity: 'SEVERE' },
    'severity',
    'SEVERE',
    'category=FOOD',
  ],
  [
    'medications',
    { name: 'Atorvastatin 20 mg' },
    { name: 'Atorvastatin 40 mg' },
    'name',
    'Atorvastatin 40 mg',
    'status=ACTIVE',
  ],
])('every kind: %s', (path, body, correction, field, corrected, filter) => {
  it('creates, reads back, lists with paging and a filter, corrects, withdraws, and stays in its organization', async () => {
    const patientId = await newPatient()
    const url = `/api/patients/${patientId}/${path}`
    const created = await post(provider, url, body)
    expect(created.statusCode).toBe(201)
    const { id } = created.json().data
    // A second record (allergies: a second ACTIVE one to the same substance would be refused).
    await post(provider, url, path === 'allergies' ? { ...body, status: 'INACTIVE' } : body)
    expect((await get(nurse, `${url}/${id}`)).json().data).toEqual(created.json().data)

    const page = (await get(nurse, `${url}?size=1&${filter}`)).json().data
    expect(page.content).toHaveLength(1)
    expect(page.pageable).toEqual({ pageNumber: 0, pageSize: 1 })
    expect(page.totalElements).toBe(2)

    const fixed = await app.inject({
      method: 'PUT',
      url: `${url}/${id}`,
      headers: bearer(provider.token),
      payload: correction,
    })
    expect(fixed.statusCode).toBe(200)
    expect(fixed.json().data).toMatchObject({ id, version: 2, [field]: corrected })

    const withdrawn = await post(provider, `${url}/${id}/entered-in-error`, { reason: 'Duplicate entry' })
    expect(withdrawn.json().data.enteredInError).toMatchObject({ by: provider.id, reason: 'Duplicate entry' })
    expect((await get(nurse, url)).json().data.totalElements).toBe(1)

    const outsider = await (await newOrganization(app)).user('PROVIDER', 'NURSE')
    expect((await get(outsider, `${url}/${id}`)).statusCode).toBe(403)
    const foreignCorrection = await app.inject({
      method: 'PUT',
      url: `${url}/${id}`,
      headers: bearer(outsider.token),
      payload: correction,
    })
    expect(foreignCorrection.statusCode).toBe(403)
    expect((await post(outsider, `${url}/${id}/entered-in-error`, { reason: 'x' })).statusCode).toBe(403)
  })
})
