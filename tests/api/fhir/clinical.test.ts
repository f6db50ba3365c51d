import type {
  AllergyIntolerance,
  Bundle,
  Condition,
  MedicationStatement,
  OperationOutcome,
} from '@medplum/fhirtypes'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { buildTestApp } from '../../helpers/app.js'
import { bearer, createPatient, newOrganization, type TestUser } from '../../helpers/factories.js'
import { expectFhir, fhirGet, matchIds, smartToken } from '../../helpers/fhir.js'

let app: App

beforeAll(async () => {
  app = await buildTestApp({ PUBLIC_URL: 'https://ehr.example.test' })
})
afterAll(async () => {
  await app.close()
})

const get = (user: TestUser | string, path: string, headers: Record<string, string> = {}) =>
  fhirGet(app, user, path, headers)

async function practice() {
  const org = await newOrganization(app)
  const provider = await org.user('PROVIDER')
  const nurse = await org.user('NURSE')
  const patient = await createPatient(app, nurse)
  return { org, provider, nurse, patient }
}

/** Records a clinical record through the REST API and returns its id. */
async function record(user: TestUser, patientId: number, path: string, body: object): Promise<number> {
  const response = await app.inject({
    method: 'POST',
    url: `/api/patients/${patientId}/${path}`,
    headers: bearer(user.token),
    payload: body,
  })
  if (response.statusCode !== 201) throw new Error(`${path} not recorded: ${response.body}`)
  return response.json().data.id
}

async function withdraw(user: TestUser, patientId: number, path: string, id: number) {
  const response = await app.inject({
    method: 'POST',
    url: `/api/patients/${patientId}/${path}/${id}/entered-in-error`,
    headers: bearer(user.token),
    payload: { reason: 'Recorded for the wrong patient' },
  })
  expect(response.statusCode).toBe(200)
}

/** Every page of a search, following next links to the end. */
async function allPages(user: TestUser, path: string): Promise<{ ids: number[]; pages: number }> {
  const ids: number[] = []
  let url: string | undefined = `/fhir/R4${path}`
  let pages = 0
  while (url && pages < 20) {
    const response = await app.inject({ url, headers: bearer(user.token) })
    expect(response.statusCode).toBe(200)
    const bundle = expectFhir(response) as Bundle
    ids.push(...matchIds(bundle))
    pages++
    const next = bundle.link?.find((link) => link.relation === 'next')?.url
    url = next ? next.slice(next.indexOf('/fhir/R4')) : undefined
  }
  return { ids, pages }
}

const condition = (overrides: object = {}) => ({
  icd10Code: 'E11.9',
  description: 'Type 2 diabetes mellitus without complications',
  onsetDate: '2019-04-01',
  ...overrides,
})
const allergy = (overrides: object = {}) => ({
  substance: 'Penicillin',
  category: 'MEDICATION',
  ...overrides,
})
const medication = (overrides: object = {}) => ({ name: 'Metformin 500 mg tablet', ...overrides })

describe('GET /fhir/R4/Condition/{id}', () => {
  it('returns the condition as a valid Condition coded in ICD-10-CM, with statuses, category and dates', async () => {
    const { provider, nurse, patient } = await practice()
    const id = await record(
      provider,
      patient,
      'conditions',
      condition({
        clinicalStatus: 'RESOLVED',
        verificationStatus: 'PROVISIONAL',
        abatementDate: '2021-02-03',
        severity: 'MODERATE',
        note: 'Diet controlled',
      }),
    )
    const response = await get(nurse, `/Condition/${id}`)
    expect(response.statusCode).toBe(200)
    const resource = expectFhir(response) as Condition
    expect(resource).toMatchObject({
      resourceType: 'Condition',
      id: String(id),
      meta: { versionId: '1' },
      clinicalStatus: {
        coding: [{ system: 'http://terminology.hl7.org/CodeSystem/condition-clinical', code: 'resolved' }],
      },
      verificationStatus: {
        coding: [
          { system: 'http://terminology.hl7.org/CodeSystem/condition-ver-status', code: 'provisional' },
        ],
      },
      category: [
        {
          coding: [
            { system: 'http://terminology.hl7.org/CodeSystem/condition-category', code: 'problem-list-item' },
          ],
        },
      ],
      code: {
        coding: [{ system: 'http://hl7.org/fhir/sid/icd-10-cm', code: 'E11.9' }],
        text: 'Type 2 diabetes mellitus without complications',
      },
      severity: { coding: [{ system: 'http://snomed.info/sct', code: '6736007' }] },
      subject: { reference: `Patient/${patient}` },
      onsetDateTime: '2019-04-01',
      abatementDateTime: '2021-02-03',
      note: [{ text: 'Diet controlled' }],
    })
    expect(resource.recordedDate).toMatch(/^\d{4}-\d{2}-\d{2}T/)
    expect(response.headers.etag).toBe('W/"1"')
  })

  it('leaves the abatement out of a condition whose status is not abated (con-4)', async () => {
    const { provider, nurse, patient } = await practice()
    const id = await record(provider, patient, 'conditions', condition({ abatementDate: '2020-01-01' }))
    const resource = expectFhir(await get(nurse, `/Condition/${id}`)) as Condition
    expect(resource.clinicalStatus?.coding?.[0]?.code).toBe('active')
    expect(resource.abatementDateTime).toBeUndefined()
  })

  it('shows a withdrawn condition as entered-in-error without a clinical status, at its new version', async () => {
    const { provider, nurse, patient } = await practice()
    const id = await record(provider, patient, 'conditions', condition())
    await withdraw(provider, patient, 'conditions', id)
    const response = await get(nurse, `/Condition/${id}`)
    expect(response.statusCode).toBe(200)
    const resource = expectFhir(response) as Condition
    expect(resource.verificationStatus?.coding?.[0]?.code).toBe('entered-in-error')
    expect(resource.clinicalStatus).toBeUndefined()
    expect(resource.meta?.versionId).toBe('2')
  })

  it('answers 304 for a current If-None-Match, reads the current version by _history, 404 another', async () => {
    const { provider, nurse, patient } = await practice()
    const id = await record(provider, patient, 'conditions', condition())
    expect((await get(nurse, `/Condition/${id}`, { 'if-none-match': 'W/"1"' })).statusCode).toBe(304)
    expect((await get(nurse, `/Condition/${id}`, { 'if-none-match': 'W/"2"' })).statusCode).toBe(200)
    expect((await get(nurse, `/Condition/${id}/_history/1`)).statusCode).toBe(200)
    const older = await get(nurse, `/Condition/${id}/_history/2`)
    expect(older.statusCode).toBe(404)
    expect((expectFhir(older) as OperationOutcome).issue?.[0]?.code).toBe('not-found')
  })
})

describe('reads of clinical records: errors', () => {
  it('answers 404 for a record of another kind or none, 403 for another organization’s', async () => {
    const { provider, nurse, patient } = await practice()
    const other = await practice()
    const conditionId = await record(provider, patient, 'conditions', condition())
    const allergyId = await record(provider, patient, 'allergies', allergy())
    const medicationId = await record(provider, patient, 'medications', medication())
    const foreign = {
      condition: await record(other.provider, other.patient, 'conditions', condition()),
      allergy: await record(other.provider, other.patient, 'allergies', allergy()),
      medication: await record(other.provider, other.patient, 'medications', medication()),
    }
    const cases: [string, number, string][] = [
      [`/Condition/${allergyId}`, 404, 'not-found'],
      [`/AllergyIntolerance/${medicationId}`, 404, 'not-found'],
      [`/MedicationStatement/${conditionId}`, 404, 'not-found'],
      ['/Condition/2000000000', 404, 'not-found'],
      [`/Condition/${foreign.condition}`, 403, 'forbidden'],
      [`/AllergyIntolerance/${foreign.allergy}`, 403, 'forbidden'],
      [`/MedicationStatement/${foreign.medication}`, 403, 'forbidden'],
      // Another organization's record of another kind is none of this type: 404, not 403.
      [`/Condition/${foreign.allergy}`, 404, 'not-found'],
    ]
    for (const [path, status, code] of cases) {
      const response = await get(nurse, path)
      expect(response.statusCode, path).toBe(status)
      expect((expectFhir(response) as OperationOutcome).issue?.[0]?.code, path).toBe(code)
    }
  })

  it('answers 404 for the records of a deleted patient, as the REST API does', async () => {
    const { org, provider, nurse, patient } = await practice()
    const admin = await org.user('ADMIN')
    const id = await record(provider, patient, 'conditions', condition())
    await app.inject({ method: 'DELETE', url: `/api/patients/${patient}`, headers: bearer(admin.token) })
    expect((await get(nurse, `/Condition/${id}`)).statusCode).toBe(404)
    expect(matchIds(expectFhir(await get(nurse, `/Condition?patient=${patient}`)) as Bundle)).toEqual([])
  })

  it('refuses roles the REST clinical routes refuse (FRONT_DESK, BILLING, ADMIN)', async () => {
    const { org, provider, patient } = await practice()
    const ids = {
      Condition: await record(provider, patient, 'conditions', condition()),
      AllergyIntolerance: await record(provider, patient, 'allergies', allergy()),
      MedicationStatement: await record(provider, patient, 'medications', medication()),
    }
    for (const role of ['FRONT_DESK', 'BILLING', 'ADMIN'] as const) {
      const user = await org.user(role)
      for (const [type, id] of Object.entries(ids)) {
        const read = await get(user, `/${type}/${id}`)
        expect(read.statusCode, `${role} ${type}`).toBe(403)
        expectFhir(read)
        expect((await get(user, `/${type}?patient=${patient}`)).statusCode, `${role} ${type}`).toBe(403)
      }
    }
    for (const [type, id] of Object.entries(ids)) {
      expect((await get(provider, `/${type}/${id}`)).statusCode, type).toBe(200)
    }
  })

  it('records a read in the audit trail like a REST read', async () => {
    const { org, provider, nurse, patient } = await practice()
    const id = await record(provider, patient, 'allergies', allergy())
    await get(nurse, `/AllergyIntolerance/${id}`)
    await app.auditLog.flush()
    const rows = await app.db
      .selectFrom('audit_log')
      .select(['action', 'resource_type', 'resource_ids'])
      .where('organization_id', '=', org.id)
      .where('action', '=', 'READ')
      .execute()
    expect(rows).toContainEqual({ action: 'READ', resource_type: 'allergy', resource_ids: [id] })
  })
})

describe('GET /fhir/R4/Condition (search)', () => {
  it('finds by patient, clinical-status, category, code and _lastUpdated', async () => {
    const { provider, nurse, patient } = await practice()
    const second = await createPatient(app, nurse)
    const ids = {
      diabetes: await record(provider, patient, 'conditions', condition()),
      asthma: await record(
        provider,
        patient,
        'conditions',
        condition({ icd10Code: 'J45.909', description: 'Asthma', clinicalStatus: 'REMISSION' }),
      ),
      other: await record(
        provider,
        second,
        'conditions',
        condition({ icd10Code: 'I10', description: 'Hypertension', clinicalStatus: 'RESOLVED' }),
      ),
      withdrawn: await record(provider, second, 'conditions', condition({ icd10Code: 'I10' })),
    }
    await withdraw(provider, second, 'conditions', ids.withdrawn)
    const cases: [string, number[]][] = [
      [`patient=${patient}`, [ids.diabetes, ids.asthma]],
      [`patient=Patient/${second}`, [ids.other, ids.withdrawn]],
      [`patient=https://ehr.example.test/fhir/R4/Patient/${second}`, [ids.other, ids.withdrawn]],
      ['patient=Practitioner/1', []],
      ['clinical-status=active', [ids.diabetes]],
      ['clinical-status=remission,resolved', [ids.asthma, ids.other]],
      ['clinical-status=http://terminology.hl7.org/CodeSystem/condition-clinical|resolved', [ids.other]],
      ['clinical-status=http://other.example|resolved', []],
      ['clinical-status=active&clinical-status=remission', []],
      [`category=problem-list-item&patient=${patient}`, [ids.diabetes, ids.asthma]],
      [
        `category=http://terminology.hl7.org/CodeSystem/condition-category|problem-list-item&patient=${patient}`,
        [ids.diabetes, ids.asthma],
      ],
      ['category=encounter-diagnosis', []],
      ['code=E11.9', [ids.diabetes]],
      ['code=http://hl7.org/fhir/sid/icd-10-cm|I10', [ids.other, ids.withdrawn]],
      ['code=http://snomed.info/sct|I10', []],
      ['code=J45.909,E11.9&clinical-status=remission', [ids.asthma]],
      [`_lastUpdated=ge2020-01-01&patient=${patient}`, [ids.diabetes, ids.asthma]],
      ['_lastUpdated=lt2020-01-01', []],
      [`_lastUpdated=gt${new Date(Date.now() + 86_400_000).toISOString().slice(0, 10)}`, []],
      [`_id=${ids.asthma},${ids.other}`, [ids.asthma, ids.other]],
    ]
    for (const [query, expected] of cases) {
      const response = await get(nurse, `/Condition?${query}`)
      expect(response.statusCode, query).toBe(200)
      const bundle = expectFhir(response) as Bundle
      expect(bundle.type).toBe('searchset')
      expect(matchIds(bundle), query).toEqual(expected)
    }
    expect((await get(nurse, '/Condition?_lastUpdated=yesterday')).statusCode).toBe(400)
  })

  it('pages with next links to the end, counts with _summary=count, and never shows another organization’s', async () => {
    const { provider, nurse, patient } = await practice()
    const other = await practice()
    await record(other.provider, other.patient, 'conditions', condition())
    const ids: number[] = []
    for (const code of ['A00.0', 'B01.9', 'C50.911', 'D50.9', 'E78.5']) {
      ids.push(await record(provider, patient, 'conditions', condition({ icd10Code: code })))
    }
    const paged = await allPages(nurse, '/Condition?_count=2')
    expect(paged).toEqual({ ids, pages: 3 })
    const counted = expectFhir(await get(nurse, '/Condition?_summary=count')) as Bundle
    expect(counted.total).toBe(5)
    expect(counted.entry).toBeUndefined()
    const some = expectFhir(await get(nurse, '/Condition?_summary=count&code=A00.0,E78.5')) as Bundle
    expect(some.total).toBe(2)
  })
})

describe('GET /fhir/R4/AllergyIntolerance', () => {
  it('returns a valid AllergyIntolerance with the substance, its coding, category, criticality and reactions', async () => {
    const { provider, nurse, patient } = await practice()
    const id = await record(
      provider,
      patient,
      'allergies',
      allergy({
        substanceCode: { system: 'RXNORM', code: '7980' },
        reactions: [{ manifestation: 'Hives', severity: 'MODERATE' }, { manifestation: 'Wheezing' }],
        severity: 'SEVERE',
        criticality: 'UNABLE_TO_ASSESS',
        onsetDate: '2010-05-06',
      }),
    )
    const response = await get(nurse, `/AllergyIntolerance/${id}`)
    expect(response.statusCode).toBe(200)
    expect(response.headers.etag).toBe('W/"1"')
    const resource = expectFhir(response) as AllergyIntolerance
    expect(resource).toMatchObject({
      resourceType: 'AllergyIntolerance',
      id: String(id),
      meta: { versionId: '1' },
      clinicalStatus: {
        coding: [
          { system: 'http://terminology.hl7.org/CodeSystem/allergyintolerance-clinical', code: 'active' },
        ],
      },
      category: ['medication'],
      criticality: 'unable-to-assess',
      code: {
        coding: [{ system: 'http://www.nlm.nih.gov/research/umls/rxnorm', code: '7980' }],
        text: 'Penicillin',
      },
      patient: { reference: `Patient/${patient}` },
      onsetDateTime: '2010-05-06',
      reaction: [
        { manifestation: [{ text: 'Hives' }], severity: 'moderate' },
        { manifestation: [{ text: 'Wheezing' }] },
      ],
    })
    expect(resource.verificationStatus).toBeUndefined()
    expect(resource.reaction?.[1]?.severity).toBeUndefined()
    expect((await get(nurse, `/AllergyIntolerance/${id}`, { 'if-none-match': 'W/"1"' })).statusCode).toBe(304)
    expect((await get(nurse, `/AllergyIntolerance/${id}/_history/1`)).statusCode).toBe(200)
    expect((await get(nurse, `/AllergyIntolerance/${id}/_history/3`)).statusCode).toBe(404)
  })

  it('gives an uncoded substance as text only, and a withdrawn allergy as entered-in-error', async () => {
    const { provider, nurse, patient } = await practice()
    const id = await record(
      provider,
      patient,
      'allergies',
      allergy({ substance: 'Peanuts', category: 'FOOD' }),
    )
    const plain = expectFhir(await get(nurse, `/AllergyIntolerance/${id}`)) as AllergyIntolerance
    expect(plain.code).toEqual({ text: 'Peanuts' })
    expect(plain.reaction).toBeUndefined()
    await withdraw(provider, patient, 'allergies', id)
    const removed = expectFhir(await get(nurse, `/AllergyIntolerance/${id}`)) as AllergyIntolerance
    expect(removed.verificationStatus).toEqual({
      coding: [
        {
          system: 'http://terminology.hl7.org/CodeSystem/allergyintolerance-verification',
          code: 'entered-in-error',
        },
      ],
    })
    expect(removed.clinicalStatus).toBeUndefined()
  })

  it('finds by patient, clinical-status, category and _lastUpdated; pages and counts', async () => {
    const { provider, nurse, patient } = await practice()
    const second = await createPatient(app, nurse)
    const ids = {
      penicillin: await record(provider, patient, 'allergies', allergy()),
      peanuts: await record(
        provider,
        patient,
        'allergies',
        allergy({ substance: 'Peanuts', category: 'FOOD' }),
      ),
      pollen: await record(
        provider,
        second,
        'allergies',
        allergy({ substance: 'Pollen', category: 'ENVIRONMENT', status: 'INACTIVE' }),
      ),
      latex: await record(
        provider,
        second,
        'allergies',
        allergy({ substance: 'Latex', category: 'ENVIRONMENT', status: 'RESOLVED' }),
      ),
    }
    const cases: [string, number[]][] = [
      [`patient=${patient}`, [ids.penicillin, ids.peanuts]],
      [`patient=Patient/${second}`, [ids.pollen, ids.latex]],
      ['clinical-status=active', [ids.penicillin, ids.peanuts]],
      ['clinical-status=inactive,resolved', [ids.pollen, ids.latex]],
      [
        'clinical-status=http://terminology.hl7.org/CodeSystem/allergyintolerance-clinical|resolved',
        [ids.latex],
      ],
      ['clinical-status=entered-in-error', []],
      ['category=food', [ids.peanuts]],
      ['category=environment&clinical-status=inactive', [ids.pollen]],
      ['category=http://hl7.org/fhir/allergy-intolerance-category|medication', [ids.penicillin]],
      ['category=biologic', []],
      ['category=FOOD', []],
      [`_lastUpdated=ge2020&patient=${second}`, [ids.pollen, ids.latex]],
      ['_lastUpdated=le2020-01-01T00:00:00Z', []],
    ]
    for (const [query, expected] of cases) {
      const response = await get(nurse, `/AllergyIntolerance?${query}`)
      expect(response.statusCode, query).toBe(200)
      expect(matchIds(expectFhir(response) as Bundle), query).toEqual(expected)
    }
    const paged = await allPages(nurse, '/AllergyIntolerance?_count=3')
    expect(paged).toEqual({ ids: Object.values(ids), pages: 2 })
    const counted = expectFhir(await get(nurse, '/AllergyIntolerance?_summary=count&category=environment'))
    expect((counted as Bundle).total).toBe(2)
  })
})

describe('GET /fhir/R4/MedicationStatement', () => {
  it('returns a valid MedicationStatement with the RxNorm code, period, dosage text and its parts', async () => {
    const { provider, nurse, patient } = await practice()
    const id = await record(
      provider,
      patient,
      'medications',
      medication({
        rxnormCode: '861007',
        dose: 500,
        doseUnit: 'mg',
        route: 'ORAL',
        frequency: 'twice daily',
        startDate: '2024-01-02',
        endDate: '2024-06-30',
        status: 'COMPLETED',
        instructions: 'Take with meals',
      }),
    )
    const response = await get(nurse, `/MedicationStatement/${id}`)
    expect(response.statusCode).toBe(200)
    expect(response.headers.etag).toBe('W/"1"')
    const resource = expectFhir(response) as MedicationStatement
    expect(resource).toMatchObject({
      resourceType: 'MedicationStatement',
      id: String(id),
      meta: { versionId: '1' },
      status: 'completed',
      medicationCodeableConcept: {
        coding: [{ system: 'http://www.nlm.nih.gov/research/umls/rxnorm', code: '861007' }],
        text: 'Metformin 500 mg tablet',
      },
      subject: { reference: `Patient/${patient}` },
      effectivePeriod: { start: '2024-01-02', end: '2024-06-30' },
      dosage: [
        {
          text: '500 mg oral twice daily; Take with meals',
          route: { coding: [{ system: 'http://snomed.info/sct', code: '26643006' }] },
          doseAndRate: [{ doseQuantity: { value: 500, unit: 'mg' } }],
          timing: { code: { text: 'twice daily' } },
          additionalInstruction: [{ text: 'Take with meals' }],
        },
      ],
    })
    expect(resource.dateAsserted).toMatch(/^\d{4}-\d{2}-\d{2}T/)
    expect((await get(nurse, `/MedicationStatement/${id}`, { 'if-none-match': 'W/"1"' })).statusCode).toBe(
      304,
    )
    expect((await get(nurse, `/MedicationStatement/${id}/_history/1`)).statusCode).toBe(200)
    expect((await get(nurse, `/MedicationStatement/${id}/_history/2`)).statusCode).toBe(404)
  })

  it('gives an uncoded medication as text only, with no dosage when none is recorded', async () => {
    const { provider, nurse, patient } = await practice()
    const id = await record(provider, patient, 'medications', medication({ name: 'Fish oil' }))
    const resource = expectFhir(await get(nurse, `/MedicationStatement/${id}`)) as MedicationStatement
    expect(resource.medicationCodeableConcept).toEqual({ text: 'Fish oil' })
    expect(resource.status).toBe('active')
    expect(resource.dosage).toBeUndefined()
    expect(resource.effectivePeriod).toBeUndefined()
  })

  it('finds by patient, status (withdrawn ones as entered-in-error) and _lastUpdated; pages and counts', async () => {
    const { provider, nurse, patient } = await practice()
    const second = await createPatient(app, nurse)
    const ids = {
      active: await record(provider, patient, 'medications', medication()),
      held: await record(provider, patient, 'medications', medication({ status: 'ON_HOLD' })),
      stopped: await record(provider, second, 'medications', medication({ status: 'STOPPED' })),
      withdrawn: await record(provider, second, 'medications', medication()),
    }
    await withdraw(provider, second, 'medications', ids.withdrawn)
    const cases: [string, number[]][] = [
      [`patient=${patient}`, [ids.active, ids.held]],
      [`patient=Patient/${second}`, [ids.stopped, ids.withdrawn]],
      ['status=active', [ids.active]],
      ['status=on-hold,stopped', [ids.held, ids.stopped]],
      ['status=entered-in-error', [ids.withdrawn]],
      ['status=http://hl7.org/fhir/CodeSystem/medication-statement-status|stopped', [ids.stopped]],
      ['status=ACTIVE', []],
      [`status=active,on-hold&patient=${second}`, []],
      [`_lastUpdated=ge2020-01-01&patient=${patient}`, [ids.active, ids.held]],
      ['_lastUpdated=lt2020-01-01', []],
    ]
    for (const [query, expected] of cases) {
      const response = await get(nurse, `/MedicationStatement?${query}`)
      expect(response.statusCode, query).toBe(200)
      expect(matchIds(expectFhir(response) as Bundle), query).toEqual(expected)
    }
    const withdrawnOne = (
      expectFhir(await get(nurse, `/MedicationStatement/${ids.withdrawn}`)) as MedicationStatement
    ).status
    expect(withdrawnOne).toBe('entered-in-error')
    const paged = await allPages(nurse, '/MedicationStatement?_count=1')
    expect(paged).toEqual({ ids: Object.values(ids), pages: 4 })
    const counted = expectFhir(await get(nurse, '/MedicationStatement?_summary=count&status=active'))
    expect((counted as Bundle).total).toBe(1)
  })
})

describe('SMART scopes on clinical records', () => {
  it('keeps a patient/ token to its launch patient’s records (the patient compartment)', async () => {
    const { org, provider, nurse, patient } = await practice()
    const second = await createPatient(app, nurse)
    const mine = {
      Condition: await record(provider, patient, 'conditions', condition()),
      AllergyIntolerance: await record(provider, patient, 'allergies', allergy()),
      MedicationStatement: await record(provider, patient, 'medications', medication()),
    }
    const theirs = {
      Condition: await record(provider, second, 'conditions', condition()),
      AllergyIntolerance: await record(provider, second, 'allergies', allergy()),
      MedicationStatement: await record(provider, second, 'medications', medication()),
    }
    for (const scope of [
      'patient/*.rs',
      'patient/Condition.read patient/AllergyIntolerance.read patient/MedicationStatement.read',
    ]) {
      const token = smartToken(app, org, nurse, scope.split(' '), patient)
      for (const type of ['Condition', 'AllergyIntolerance', 'MedicationStatement'] as const) {
        expect((await get(token, `/${type}/${mine[type]}`)).statusCode, `${scope} ${type}`).toBe(200)
        const foreign = await get(token, `/${type}/${theirs[type]}`)
        expect(foreign.statusCode, `${scope} ${type}`).toBe(403)
        expectFhir(foreign)
        expect(matchIds(expectFhir(await get(token, `/${type}`)) as Bundle), type).toEqual([mine[type]])
        expect(matchIds(expectFhir(await get(token, `/${type}?patient=${second}`)) as Bundle), type).toEqual(
          [],
        )
        const counted = expectFhir(await get(token, `/${type}?_summary=count`)) as Bundle
        expect(counted.total, type).toBe(1)
      }
    }
  })

  it('keeps a granular Condition scope to its category', async () => {
    const { org, provider, nurse, patient } = await practice()
    const id = await record(provider, patient, 'conditions', condition())
    const CATEGORY = 'http://terminology.hl7.org/CodeSystem/condition-category'
    for (const category of [`${CATEGORY}|problem-list-item`, 'problem-list-item']) {
      const token = smartToken(app, org, nurse, [`patient/Condition.rs?category=${category}`], patient)
      expect((await get(token, `/Condition/${id}`)).statusCode, category).toBe(200)
      expect(matchIds(expectFhir(await get(token, '/Condition')) as Bundle), category).toEqual([id])
    }
    const diagnoses = smartToken(
      app,
      org,
      nurse,
      ['patient/Condition.rs?category=encounter-diagnosis'],
      patient,
    )
    const refused = await get(diagnoses, `/Condition/${id}`)
    expect(refused.statusCode).toBe(403)
    expectFhir(refused)
    expect(matchIds(expectFhir(await get(diagnoses, '/Condition')) as Bundle)).toEqual([])
    expect((expectFhir(await get(diagnoses, '/Condition?_summary=count')) as Bundle).total).toBe(0)
    // Categories are granted on Observation and Condition only.
    const allergies = smartToken(app, org, nurse, ['patient/AllergyIntolerance.rs?category=food'], patient)
    expect((await get(allergies, '/AllergyIntolerance')).statusCode).toBe(403)
  })

  it('refuses a type the scopes do not grant', async () => {
    const { org, provider, nurse, patient } = await practice()
    const id = await record(provider, patient, 'conditions', condition())
    const allergiesOnly = smartToken(app, org, nurse, ['patient/AllergyIntolerance.rs'], patient)
    expect((await get(allergiesOnly, `/Condition/${id}`)).statusCode).toBe(403)
    expect((await get(allergiesOnly, '/Condition')).statusCode).toBe(403)
    expect((await get(allergiesOnly, '/AllergyIntolerance')).statusCode).toBe(200)
  })
})

describe('GET /fhir/R4/metadata', () => {
  it('declares the clinical types with their search parameters and the patient include', async () => {
    const response = await app.inject({ url: '/fhir/R4/metadata' })
    const statement = expectFhir(response) as unknown as {
      rest: { resource: { type: string; searchParam: { name: string }[]; searchInclude?: string[] }[] }[]
    }
    const of = (type: string) => statement.rest[0]?.resource.find((resource) => resource.type === type)
    const names = (type: string) => of(type)?.searchParam.map((parameter) => parameter.name)
    expect(names('Condition')).toEqual(
      expect.arrayContaining(['patient', 'clinical-status', 'category', 'code', '_lastUpdated']),
    )
    expect(names('AllergyIntolerance')).toEqual(
      expect.arrayContaining(['patient', 'clinical-status', 'category', '_lastUpdated']),
    )
    expect(names('MedicationStatement')).toEqual(
      expect.arrayContaining(['patient', 'status', '_lastUpdated']),
    )
    expect(of('Condition')?.searchInclude).toEqual(['Condition:patient'])
  })
})
