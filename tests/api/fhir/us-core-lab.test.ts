import { randomUUID } from 'node:crypto'
import type { Bundle, DiagnosticReport, Observation, OperationOutcome, Resource } from '@medplum/fhirtypes'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { buildTestApp } from '../../helpers/app.js'
import { danglingReferences, exported, exportedResources, idsOf } from '../../helpers/bulk-export.js'
import { bearer, createPatient, newOrganization, type TestUser } from '../../helpers/factories.js'
import { expectFhir, fhirGet, matchIds, smartToken } from '../../helpers/fhir.js'
import { usCoreErrors } from '../../helpers/us-core.js'
import { signedInPatient } from '../patient-users/helpers.js'

// Lab results as US Core 6.1.0 Laboratory Result Observations, each reported by a US Core
// Laboratory DiagnosticReport of the same id.

let app: App

beforeAll(async () => {
  app = await buildTestApp()
})
afterAll(async () => {
  await app.close()
})

const PROFILES = 'http://hl7.org/fhir/us/core/StructureDefinition'
const OBSERVATION_LAB = `${PROFILES}/us-core-observation-lab|6.1.0`
const REPORT_LAB = `${PROFILES}/us-core-diagnosticreport-lab|6.1.0`
const V2_0074 = 'http://terminology.hl7.org/CodeSystem/v2-0074'
const LOINC = 'http://loinc.org'

const glucose = {
  testCode: '2345-7',
  testName: 'Glucose [Mass/volume] in Serum or Plasma',
  value: 182,
  unit: 'mg/dL',
  referenceRange: { low: 70, high: 99 },
  specimenCollectedAt: '2024-01-10T07:00:00Z',
  resultedAt: '2024-01-10T15:00:00Z',
}
const urineColor = {
  testCode: '5778-6',
  testName: 'Color of Urine',
  value: 'Yellow',
  referenceRange: { text: 'Yellow' },
  resultedAt: '2024-02-11T10:00:00Z',
}
const minimal = { testCode: '718-7', testName: 'Hemoglobin', value: 13.1 }

async function practice() {
  const org = await newOrganization(app)
  const provider = await org.user('PROVIDER')
  const nurse = await org.user('NURSE')
  const frontDesk = await org.user('FRONT_DESK')
  const patient = await createPatient(app, frontDesk)
  return { org, provider, nurse, frontDesk, patient }
}

async function send(user: TestUser, method: 'POST' | 'PUT', url: string, payload: object, status = 201) {
  const response = await app.inject({ method, url, headers: bearer(user.token), payload })
  expect(response.statusCode, `${url}: ${response.body}`).toBe(status)
  return response.json().data.id as number
}

const lab = (user: TestUser, patient: number, body: object) =>
  send(user, 'POST', `/api/patients/${patient}/lab-results`, body)

async function read<R extends Resource>(user: TestUser | string, path: string): Promise<R> {
  const response = await fhirGet(app, user, path)
  expect(response.statusCode, `${path}: ${response.body}`).toBe(200)
  return expectFhir(response) as R
}

async function search(user: TestUser | string, path: string): Promise<number[]> {
  const response = await fhirGet(app, user, path)
  expect(response.statusCode, `${path}: ${response.body}`).toBe(200)
  return matchIds(expectFhir(response) as Bundle)
}

/** Numeric, text, minimal, corrected and withdrawn results of one patient. */
async function results() {
  const chart = await practice()
  const { provider, patient } = chart
  const numeric = await lab(provider, patient, glucose)
  const text = await lab(provider, patient, urineColor)
  const bare = await lab(provider, patient, minimal)
  const corrected = await lab(provider, patient, { ...glucose, value: 40 })
  const correction = { ...glucose, value: 45 }
  await send(provider, 'PUT', `/api/patients/${patient}/lab-results/${corrected}`, correction, 200)
  const withdrawn = await lab(provider, patient, { ...minimal, status: 'PRELIMINARY' })
  const url = `/api/patients/${patient}/lab-results/${withdrawn}/entered-in-error`
  await send(provider, 'POST', url, { reason: 'Wrong patient' }, 200)
  return { ...chart, ids: { numeric, text, bare, corrected, withdrawn } }
}

describe('Observation (us-core-observation-lab)', () => {
  it('claims the profile and meets it with numeric, text, minimal, corrected and withdrawn results', async () => {
    const { provider, patient, ids } = await results()
    for (const [name, id] of Object.entries(ids)) {
      const observation = await read<Observation>(provider, `/Observation/${id}`)
      expect(observation.meta?.profile, name).toEqual([OBSERVATION_LAB])
      expect(usCoreErrors(observation, OBSERVATION_LAB), name).toEqual([])
      expect(observation.category?.[0]?.coding?.[0]).toMatchObject({ code: 'laboratory' })
      expect(observation.code.coding?.[0]?.system, name).toBe(LOINC)
      expect(observation.subject, name).toEqual({ reference: `Patient/${patient}` })
      expect(observation.effectiveDateTime, name).toBeDefined()
      expect(observation.issued, name).toBeDefined()
    }
    const numeric = await read<Observation>(provider, `/Observation/${ids.numeric}`)
    expect(numeric.valueQuantity).toEqual({
      value: 182,
      unit: 'mg/dL',
      system: 'http://unitsofmeasure.org',
      code: 'mg/dL',
    })
    expect(numeric.effectiveDateTime).toBe('2024-01-10T07:00:00.000Z')
    expect(numeric.interpretation?.[0]?.coding?.[0]?.code).toBe('H')
    const text = await read<Observation>(provider, `/Observation/${ids.text}`)
    expect(text.valueString).toBe('Yellow')
    expect(text.effectiveDateTime).toBe('2024-02-11T10:00:00.000Z')
    expect(text.referenceRange).toEqual([{ text: 'Yellow' }])
    // A unit written in UCUM's syntax but no UCUM unit (cells, lower-case dl) is sent as text alone.
    for (const unit of ['cells/uL', 'mg/dl']) {
      const id = await lab(provider, patient, { ...minimal, unit })
      const observation = await read<Observation>(provider, `/Observation/${id}`)
      expect(observation.valueQuantity, unit).toEqual({ value: 13.1, unit })
      expect(usCoreErrors(observation, OBSERVATION_LAB), unit).toEqual([])
    }
    const counted = await lab(provider, patient, { ...minimal, unit: '10*3/uL' })
    expect((await read<Observation>(provider, `/Observation/${counted}`)).valueQuantity?.system).toBe(
      'http://unitsofmeasure.org',
    )
    expect((await read<Observation>(provider, `/Observation/${ids.corrected}`)).status).toBe('corrected')
    expect((await read<Observation>(provider, `/Observation/${ids.withdrawn}`)).status).toBe(
      'entered-in-error',
    )
  })
})

describe('DiagnosticReport (us-core-diagnosticreport-lab)', () => {
  it('reports each lab result under its id: claims the profile and meets it', async () => {
    const { org, provider, patient, ids } = await results()
    const report = await read<DiagnosticReport>(provider, `/DiagnosticReport/${ids.numeric}`)
    expect(report).toEqual({
      resourceType: 'DiagnosticReport',
      id: String(ids.numeric),
      meta: { versionId: '1', lastUpdated: expect.any(String), profile: [REPORT_LAB] },
      status: 'final',
      category: [{ coding: [{ system: V2_0074, code: 'LAB', display: 'Laboratory' }] }],
      code: { coding: [{ system: LOINC, code: '2345-7' }], text: glucose.testName },
      subject: { reference: `Patient/${patient}` },
      effectiveDateTime: '2024-01-10T07:00:00.000Z',
      issued: '2024-01-10T15:00:00.000Z',
      performer: [{ reference: `Organization/${org.id}` }],
      result: [{ reference: `Observation/${ids.numeric}` }],
    })
    const statuses: Record<string, string> = {
      numeric: 'final',
      text: 'final',
      bare: 'final',
      corrected: 'corrected',
      withdrawn: 'entered-in-error',
    }
    for (const [name, id] of Object.entries(ids)) {
      const each = await read<DiagnosticReport>(provider, `/DiagnosticReport/${id}`)
      expect(usCoreErrors(each, REPORT_LAB), name).toEqual([])
      expect(each.status, name).toBe(statuses[name])
      const observation = await read<Observation>(provider, `/Observation/${id}`)
      expect(each.meta?.versionId, name).toBe(observation.meta?.versionId)
      expect([each.code, each.effectiveDateTime, each.issued], name).toEqual([
        observation.code,
        observation.effectiveDateTime,
        observation.issued,
      ])
    }
  })

  it('keeps the versions of the lab result: _history and vread', async () => {
    const { provider, ids } = await results()
    const history = await read<Bundle>(provider, `/DiagnosticReport/${ids.corrected}/_history`)
    expect(history.entry?.map((entry) => (entry.resource as DiagnosticReport).status)).toEqual([
      'corrected',
      'final',
    ])
    const first = await read<DiagnosticReport>(provider, `/DiagnosticReport/${ids.corrected}/_history/1`)
    expect(first.status).toBe('final')
    const typeHistory = await read<Bundle>(provider, '/DiagnosticReport/_history')
    expect(typeHistory.entry?.every((entry) => entry.resource?.resourceType === 'DiagnosticReport')).toBe(
      true,
    )
  })

  it('searches by patient, category, code, date, status, _id and _lastUpdated', async () => {
    const { provider, frontDesk, patient, ids } = await results()
    const other = await createPatient(app, frontDesk)
    const others = await lab(provider, other, {
      ...glucose,
      specimenCollectedAt: '2025-05-05T05:00:00Z',
      resultedAt: '2025-05-05T09:00:00Z',
    })
    await send(provider, 'POST', `/api/patients/${patient}/vitals`, { heartRate: 70 })
    const mine = Object.values(ids)
    const cases: [string, number[]][] = [
      [`patient=${patient}&category=LAB`, mine],
      [`patient=Patient/${patient}&category=${V2_0074}|LAB`, mine],
      [`subject=${other}`, [others]],
      ['category=LAB', [...mine, others]],
      [`category=${V2_0074}|RAD`, []],
      ['category=http://other.example|LAB', []],
      ['category=laboratory', []],
      [`patient=${patient}&code=2345-7`, [ids.numeric, ids.corrected]],
      [`patient=${patient}&code=${LOINC}|5778-6`, [ids.text]],
      [`patient=${patient}&code=http://snomed.info/sct|5778-6`, []],
      [`patient=${patient}&category=LAB&date=2024-01-10`, [ids.numeric, ids.corrected]],
      [`category=LAB&date=ge2024-02-01&date=lt2025-01-01`, [ids.text]],
      [`category=LAB&date=gt2025-05-05T04:00:00Z&date=le2025-05-05`, [others]],
      [`patient=${patient}&date=le2024-01-10T07:00:00Z`, [ids.numeric, ids.corrected]],
      [`patient=${patient}&status=corrected`, [ids.corrected]],
      [`patient=${patient}&status=entered-in-error`, [ids.withdrawn]],
      [`patient=${patient}&status=final,preliminary`, [ids.numeric, ids.text, ids.bare]],
      [`patient=${patient}&status=registered`, []],
      [`_id=${ids.text},${others}`, [ids.text, others]],
      [`patient=${patient}&_lastUpdated=ge2000-01-01`, mine],
      [`patient=${patient}&_lastUpdated=lt2000-01-01`, []],
    ]
    for (const [query, expected] of cases) {
      expect((await search(provider, `/DiagnosticReport?${query}`)).sort(), query).toEqual(
        [...expected].sort(),
      )
    }
    // The minimal ones were resulted now, the two glucose results collected at the same time.
    expect(await search(provider, `/DiagnosticReport?patient=${patient}&_sort=date`)).toEqual([
      ids.numeric,
      ids.corrected,
      ids.text,
      ids.bare,
      ids.withdrawn,
    ])
  })

  it('answers bad search input with an OperationOutcome or no match, never a 500', async () => {
    const { provider, patient } = await results()
    for (const query of ['date=yesterday', 'date=xx2024-01-01']) {
      const response = await fhirGet(app, provider, `/DiagnosticReport?${query}`)
      expect(response.statusCode, query).toBe(400)
      expect((expectFhir(response) as OperationOutcome).issue?.[0]?.code, query).toBe('invalid')
    }
    for (const query of ['category=', 'category=RAD', 'code=', 'status=bogus', 'patient=Practitioner/1']) {
      expect(await search(provider, `/DiagnosticReport?patient=${patient}&${query}`), query).toEqual([])
    }
    // Parameters it does not take are ignored, and said so in an outcome entry.
    const response = await fhirGet(app, provider, `/DiagnosticReport?patient=${patient}&_sort=issued`)
    const bundle = expectFhir(response) as Bundle
    expect(matchIds(bundle)).toHaveLength(5)
    expect(bundle.entry?.some((entry) => entry.resource?.resourceType === 'OperationOutcome')).toBe(true)
  })

  it('includes the result Observations and the patient', async () => {
    const { provider, patient, ids } = await results()
    const response = await fhirGet(
      app,
      provider,
      `/DiagnosticReport?_id=${ids.numeric}&_include=DiagnosticReport:result&_include=DiagnosticReport:patient`,
    )
    const bundle = expectFhir(response) as Bundle
    const included = (bundle.entry ?? [])
      .filter((entry) => entry.search?.mode === 'include')
      .map((entry) => `${entry.resource?.resourceType}/${entry.resource?.id}`)
    expect(included.sort()).toEqual([`Observation/${ids.numeric}`, `Patient/${patient}`].sort())
  })

  it('is read-only: writes are refused', async () => {
    const { provider, ids } = await results()
    const report = await read<DiagnosticReport>(provider, `/DiagnosticReport/${ids.numeric}`)
    for (const [method, url] of [
      ['PUT', `/fhir/R4/DiagnosticReport/${ids.numeric}`],
      ['POST', '/fhir/R4/DiagnosticReport'],
      ['DELETE', `/fhir/R4/DiagnosticReport/${ids.numeric}`],
    ] as const) {
      const response = await app.inject({
        method,
        url,
        headers: { ...bearer(provider.token), 'content-type': 'application/fhir+json' },
        ...(method === 'DELETE' ? {} : { payload: report }),
      })
      expect(response.statusCode, `${method} ${url}`).toBeGreaterThanOrEqual(400)
      expect(response.statusCode, `${method} ${url}`).toBeLessThan(500)
      expectFhir(response)
    }
  })
})

describe('DiagnosticReport access', () => {
  it('answers 404 for none or another kind of record, 403 for another organization’s', async () => {
    const mine = await practice()
    const other = await results()
    const vitals = await send(mine.nurse, 'POST', `/api/patients/${mine.patient}/vitals`, { heartRate: 60 })
    const cases: [string, number, string][] = [
      ['/DiagnosticReport/2000000000', 404, 'not-found'],
      [`/DiagnosticReport/${vitals}`, 404, 'not-found'],
      [`/DiagnosticReport/${other.ids.numeric}`, 403, 'forbidden'],
    ]
    for (const [path, status, code] of cases) {
      const response = await fhirGet(app, mine.provider, path)
      expect(response.statusCode, path).toBe(status)
      expect((expectFhir(response) as OperationOutcome).issue?.[0]?.code, path).toBe(code)
    }
    expect(await search(mine.provider, '/DiagnosticReport?category=LAB')).toEqual([])
  })

  it('follows the lab results routes’ roles and audits as their reads and lists', async () => {
    const { org, provider, nurse, patient, ids } = await results()
    expect((await fhirGet(app, nurse, `/DiagnosticReport/${ids.numeric}`)).statusCode).toBe(200)
    for (const role of ['FRONT_DESK', 'BILLING', 'ADMIN'] as const) {
      const user = await org.user(role)
      for (const path of [`/DiagnosticReport/${ids.numeric}`, '/DiagnosticReport']) {
        const response = await fhirGet(app, user, path)
        expect(response.statusCode, `${role} ${path}`).toBe(403)
        expectFhir(response)
      }
    }
    const audited = async (url: string) => {
      const response = await fhirGet(app, provider, url)
      expect(response.statusCode).toBe(200)
      await app.auditLog.flush()
      const rows = await app.db
        .selectFrom('audit_log')
        .select(['action', 'resource_type', 'resource_ids', 'patient_id'])
        .where('organization_id', '=', org.id)
        .where('request_id', '=', String(response.headers['x-request-id']))
        .execute()
      return rows.map(
        (row) => `${row.action} ${row.resource_type} ${row.resource_ids.join(',')} ${row.patient_id}`,
      )
    }
    expect(await audited(`/DiagnosticReport/${ids.text}`)).toEqual([`READ lab-result ${ids.text} ${patient}`])
    expect(await audited(`/DiagnosticReport?patient=${patient}&code=5778-6`)).toEqual([
      `LIST lab-result ${ids.text} null`,
    ])
  })

  it('keeps a patient’s own account to its own reports', async () => {
    const { frontDesk, provider, patient, ids } = await results()
    const theirPatient = await createPatient(app, frontDesk)
    const theirs = await lab(provider, theirPatient, glucose)
    const account = await signedInPatient(app, frontDesk, patient, `me.${randomUUID()}@example.test`)
    expect((await search(account.token, '/DiagnosticReport?category=LAB')).sort()).toEqual(
      Object.values(ids).sort(),
    )
    expect(await search(account.token, `/DiagnosticReport?patient=${theirPatient}`)).toEqual([])
    expect((await fhirGet(app, account.token, `/DiagnosticReport/${ids.numeric}`)).statusCode).toBe(200)
    const foreign = await fhirGet(app, account.token, `/DiagnosticReport/${theirs}`)
    expect(foreign.statusCode).toBe(403)
    expectFhir(foreign)
  })

  it('honours patient/DiagnosticReport.rs, with its category, and keeps it to the launch patient', async () => {
    const { org, frontDesk, provider, patient, ids } = await results()
    const theirPatient = await createPatient(app, frontDesk)
    const theirs = await lab(provider, theirPatient, glucose)
    for (const scope of [
      'patient/DiagnosticReport.rs',
      'patient/DiagnosticReport.read',
      'patient/*.rs',
      'patient/DiagnosticReport.rs?category=LAB',
      `patient/DiagnosticReport.rs?category=${V2_0074}|LAB`,
    ]) {
      const token = smartToken(app, org, provider, [scope], patient)
      expect((await search(token, '/DiagnosticReport?category=LAB')).sort(), scope).toEqual(
        Object.values(ids).sort(),
      )
      expect((await fhirGet(app, token, `/DiagnosticReport/${ids.text}`)).statusCode, scope).toBe(200)
      expect((await fhirGet(app, token, `/DiagnosticReport/${theirs}`)).statusCode, scope).toBe(403)
    }
    const discovery = await app.inject({ url: '/fhir/R4/.well-known/smart-configuration' })
    expect(discovery.json().scopes_supported).toEqual(
      expect.arrayContaining(['patient/DiagnosticReport.rs', 'user/DiagnosticReport.rs']),
    )
    expect(discovery.json().scopes_supported).not.toContain('patient/DiagnosticReport.cud')
    const radiology = smartToken(
      app,
      org,
      provider,
      [`patient/DiagnosticReport.rs?category=${V2_0074}|RAD`],
      patient,
    )
    expect(await search(radiology, '/DiagnosticReport')).toEqual([])
    expect((await fhirGet(app, radiology, `/DiagnosticReport/${ids.text}`)).statusCode).toBe(403)
    // Reports only: their results are Observations, which the scope does not grant.
    const reportsOnly = smartToken(app, org, provider, ['patient/DiagnosticReport.rs'], patient)
    expect((await fhirGet(app, reportsOnly, `/Observation/${ids.text}`)).statusCode).toBe(403)
    const bundle = expectFhir(
      await fhirGet(app, reportsOnly, `/DiagnosticReport?_id=${ids.text}&_include=DiagnosticReport:result`),
    ) as Bundle
    expect(bundle.entry?.map((entry) => entry.search?.mode)).toEqual(['match'])
  })

  it('exports the reports at patient, group and system level, their results beside them', async () => {
    const { org, provider, ids } = await results()
    const mine = Object.values(ids).sort((a, b) => a - b)
    for (const path of ['/Patient/$export', '/Group/all-patients/$export', '/$export']) {
      const { manifest } = await exported(app, provider, `${path}?_type=DiagnosticReport,Observation`)
      expect(manifest.error, path).toEqual([])
      const byType = await exportedResources(app, provider, manifest)
      expect(idsOf(byType, 'DiagnosticReport'), path).toEqual(mine)
      const references = danglingReferences(byType)
      expect(
        references.filter((reference) => !/^(Patient|Organization)\//.test(reference)),
        path,
      ).toEqual([])
    }
    const labOnly = smartToken(app, org, provider, [`system/DiagnosticReport.rs?category=${V2_0074}|LAB`])
    const { manifest } = await exported(app, labOnly, '/$export?_type=DiagnosticReport')
    expect(idsOf(await exportedResources(app, labOnly, manifest), 'DiagnosticReport')).toEqual(mine)
  })
})
