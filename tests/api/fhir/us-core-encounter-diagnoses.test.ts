import type { Bundle, Condition } from '@medplum/fhirtypes'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { down, up } from '../../../db/migrations/0033_encounter_diagnoses.js'
import type { App } from '../../../src/app.js'
import { buildTestApp } from '../../helpers/app.js'
import { bearer } from '../../helpers/factories.js'
import { expectFhir, fhirGet } from '../../helpers/fhir.js'
import { type Clinic, newClinic } from '../../helpers/scheduling.js'
import { usCoreErrors } from '../../helpers/us-core.js'

// A signed note's diagnoses as US Core encounter-diagnosis Conditions: one each, from the signing on.

let app: App

beforeAll(async () => {
  app = await buildTestApp()
})
afterAll(async () => {
  await app.close()
})

const PROFILE = 'http://hl7.org/fhir/us/core/StructureDefinition/us-core-condition-encounter-diagnosis|6.1.0'
const CATEGORY = 'http://terminology.hl7.org/CodeSystem/condition-category'
const DIAGNOSES = [
  { icd10Code: 'R51.9', description: 'Headache, unspecified' },
  { icd10Code: 'I10', description: 'Essential (primary) hypertension' },
]

async function encounter(clinic: Clinic, diagnoses: object[], sign: boolean): Promise<number> {
  const created = await app.inject({
    method: 'POST',
    url: '/api/encounters',
    headers: bearer(clinic.doctor.token),
    payload: {
      patientId: clinic.patient.id,
      providerId: clinic.provider.id,
      encounterDate: '2024-05-02',
      encounterType: 'OFFICE_VISIT',
      soapNote: { assessment: { text: 'Tension headache; blood pressure high', diagnoses } },
    },
  })
  expect(created.statusCode, created.body).toBe(201)
  const id: number = created.json().data.id
  if (sign) {
    const signed = await app.inject({
      method: 'POST',
      url: `/api/encounters/${id}/sign`,
      headers: bearer(clinic.doctor.token),
    })
    expect(signed.statusCode, signed.body).toBe(200)
  }
  return id
}

async function conditions(clinic: Clinic, query: string): Promise<Condition[]> {
  const response = await fhirGet(app, clinic.doctor, `/Condition?patient=${clinic.patient.id}${query}`)
  expect(response.statusCode, response.body).toBe(200)
  return ((expectFhir(response) as Bundle).entry ?? []).map((entry) => entry.resource as Condition)
}

const diagnosisRecords = (organizationId: number) =>
  app.db
    .selectFrom('clinical_records')
    .select(['patient_id', 'encounter_id', 'code', 'data', 'recorded_by', 'recorded_at', 'effective_at'])
    .where('organization_id', '=', organizationId)
    .where('kind', '=', 'ENCOUNTER_DIAGNOSIS')
    .orderBy('id')
    .execute()

describe('encounter diagnoses as Conditions (us-core-condition-encounter-diagnosis)', () => {
  it('are the signed note’s diagnoses, one each, claiming and meeting the profile; a draft’s are not', async () => {
    const clinic = await newClinic(app)
    const signed = await encounter(clinic, DIAGNOSES, true)
    await encounter(clinic, [{ icd10Code: 'J45.909', description: 'Asthma' }], false)
    const found = await conditions(clinic, `&category=${CATEGORY}|encounter-diagnosis`)
    expect(found.map((condition) => condition.code)).toEqual(
      expect.arrayContaining(
        DIAGNOSES.map(({ icd10Code, description }) => ({
          coding: [{ system: 'http://hl7.org/fhir/sid/icd-10-cm', code: icd10Code }],
          text: description,
        })),
      ),
    )
    expect(found).toHaveLength(2)
    for (const condition of found) {
      expect(condition.meta?.profile).toEqual([PROFILE])
      expect(condition.encounter).toEqual({ reference: `Encounter/${signed}` })
      expect(condition.clinicalStatus).toBeUndefined()
      expect(usCoreErrors(condition, PROFILE), condition.id).toEqual([])
      const read = await fhirGet(app, clinic.doctor, `/Condition/${condition.id}`)
      expect(expectFhir(read)).toEqual(condition)
    }
    expect(await conditions(clinic, '&category=problem-list-item')).toEqual([])
    expect(await conditions(clinic, '&code=I10')).toHaveLength(1)
    const rest = await app.inject({
      method: 'GET',
      url: `/api/patients/${clinic.patient.id}/conditions`,
      headers: bearer(clinic.doctor.token),
    })
    expect(rest.statusCode).toBe(200)
    expect(rest.json().data.content).toEqual([])
  })

  it('are written through the note only: a Condition write of one is a 422', async () => {
    const clinic = await newClinic(app)
    await encounter(clinic, DIAGNOSES.slice(0, 1), true)
    const [diagnosis] = await conditions(clinic, '&category=encounter-diagnosis')
    if (!diagnosis) throw new Error('no encounter diagnosis')
    const write = (method: 'PUT' | 'POST', url: string, payload: Condition) =>
      app.inject({
        method,
        url: `/fhir/R4/${url}`,
        headers: { ...bearer(clinic.doctor.token), 'content-type': 'application/fhir+json' },
        payload,
      })
    const { meta: _meta, ...created } = diagnosis
    for (const response of [
      await write('PUT', `Condition/${diagnosis.id}`, diagnosis),
      await write('POST', 'Condition', { ...created, id: undefined }),
    ]) {
      expect(response.statusCode, response.body).toBe(422)
      expect(response.body).toContain('Condition.category')
      expect(response.body).toContain('encounter diagnosis')
    }
  })

  it('are another organization’s: 403 to read, never found by a search', async () => {
    const clinic = await newClinic(app)
    const other = await newClinic(app)
    await encounter(clinic, DIAGNOSES.slice(0, 1), true)
    const [diagnosis] = await conditions(clinic, '&category=encounter-diagnosis')
    const response = await fhirGet(app, other.doctor, `/Condition/${diagnosis?.id}`)
    expect(response.statusCode).toBe(403)
    const search = await fhirGet(app, other.doctor, `/Condition?patient=${clinic.patient.id}`)
    expect((expectFhir(search) as Bundle).entry ?? []).toEqual([])
  })

  it('of encounters signed before the migration are filled in by it, as signing writes them', async () => {
    const clinic = await newClinic(app)
    await encounter(clinic, DIAGNOSES, true)
    const written = await diagnosisRecords(clinic.org.id)
    expect(written).toHaveLength(2)
    await down(app.db)
    expect(await diagnosisRecords(clinic.org.id)).toEqual([])
    await up(app.db)
    expect(await diagnosisRecords(clinic.org.id)).toEqual(written)
  })
})
