import type { Bundle, Observation, OperationOutcome } from '@medplum/fhirtypes'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { buildTestApp } from '../../helpers/app.js'
import { exported, exportedResources } from '../../helpers/bulk-export.js'
import { bearer, createPatient, newOrganization, type TestUser } from '../../helpers/factories.js'
import { expectFhir, fhirGet, matchIds } from '../../helpers/fhir.js'
import { usCoreErrors } from '../../helpers/us-core.js'

// Vital signs as US Core 6.1.0: one Observation per measurement, each claiming the profile of its
// vital sign and meeting it with 0 errors, served like any other Observation (read, vread, history,
// search, _include, bulk export), and a US Core vital signs panel referencing them by hasMember.

let app: App

beforeAll(async () => {
  app = await buildTestApp()
})
afterAll(async () => {
  await app.close()
})

const US_CORE = 'http://hl7.org/fhir/us/core/StructureDefinition'
const LOINC = 'http://loinc.org'

async function practice() {
  const org = await newOrganization(app)
  const nurse = await org.user('NURSE')
  const provider = await org.user('PROVIDER')
  const patient = await createPatient(app, nurse)
  return { org, nurse, provider, patient }
}

async function recordVitals(user: TestUser, patient: number, body: object): Promise<number> {
  const response = await app.inject({
    method: 'POST',
    url: `/api/patients/${patient}/vitals`,
    headers: bearer(user.token),
    payload: body,
  })
  expect(response.statusCode, response.body).toBe(201)
  return response.json().data.id
}

async function read(user: TestUser, path: string): Promise<Observation> {
  const response = await fhirGet(app, user, path)
  expect(response.statusCode, response.body).toBe(200)
  return expectFhir(response) as Observation
}

const search = async (user: TestUser, query: string) => {
  const response = await fhirGet(app, user, `/Observation?${query}`)
  expect(response.statusCode, response.body).toBe(200)
  return expectFhir(response) as Bundle
}

const idOf = (reference: string | undefined) => Number(String(reference).replace('Observation/', ''))

/** The panel and each measurement it references, every one valid against the profile it claims. */
async function expectValidVitals(user: TestUser, id: number): Promise<Observation[]> {
  const panel = await read(user, `/Observation/${id}`)
  expect(panel.meta?.profile).toEqual([`${US_CORE}/us-core-vital-signs|6.1.0`])
  expect(usCoreErrors(panel, `${US_CORE}/us-core-vital-signs`)).toEqual([])
  const members = await Promise.all(
    (panel.hasMember ?? []).map((member) => read(user, `/Observation/${idOf(member.reference)}`)),
  )
  for (const member of members) {
    const [profile] = member.meta?.profile ?? []
    expect(profile, member.id).toMatch(
      /^http:\/\/hl7\.org\/fhir\/us\/core\/StructureDefinition\/.+\|6\.1\.0$/,
    )
    expect(usCoreErrors(member, String(profile)), String(profile)).toEqual([])
  }
  return members
}

const FULL = {
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
}

describe('US Core vital signs', () => {
  it('serves each measurement as an Observation of its US Core profile, with 0 errors, for full and minimal vitals', async () => {
    const { nurse, patient } = await practice()
    const full = await expectValidVitals(nurse, await recordVitals(nurse, patient, FULL))
    expect(full.map((member) => member.meta?.profile?.[0]?.replace(`${US_CORE}/`, ''))).toEqual([
      'us-core-blood-pressure|6.1.0',
      'us-core-heart-rate|6.1.0',
      'us-core-respiratory-rate|6.1.0',
      'us-core-body-temperature|6.1.0',
      'us-core-pulse-oximetry|6.1.0',
      'us-core-body-height|6.1.0',
      'us-core-body-weight|6.1.0',
      'us-core-bmi|6.1.0',
      'us-core-simple-observation|6.1.0',
    ])
    for (const minimal of [{ heartRate: 60 }, { diastolic: 70 }, { painScore: 0 }, { spo2: 99 }]) {
      const members = await expectValidVitals(nurse, await recordVitals(nurse, patient, minimal))
      expect(members, JSON.stringify(minimal)).toHaveLength(1)
    }
  })

  it('finds a patient’s heart rates by code, and every vital sign (panels too) by category, like any Observation', async () => {
    const { nurse, patient } = await practice()
    const other = await createPatient(app, nurse)
    const first = await recordVitals(nurse, patient, { recordedAt: '2024-01-01T08:00:00Z', heartRate: 60 })
    const second = await recordVitals(nurse, patient, {
      recordedAt: '2024-02-01T08:00:00Z',
      heartRate: 64,
      weightKg: 70,
    })
    await recordVitals(nurse, other, { heartRate: 90 })
    const [firstRate] = (await read(nurse, `/Observation/${first}`)).hasMember ?? []
    const [secondRate, weight] = (await read(nurse, `/Observation/${second}`)).hasMember ?? []
    const rates = [idOf(firstRate?.reference), idOf(secondRate?.reference)]

    const heartRates = await search(nurse, `patient=${patient}&code=${LOINC}|8867-4`)
    expect(matchIds(heartRates)).toEqual(rates)
    for (const entry of heartRates.entry ?? []) {
      const rate = entry.resource as Observation
      expect(rate.code.coding?.[0]?.code).toBe('8867-4')
      expect(usCoreErrors(rate, `${US_CORE}/us-core-heart-rate`)).toEqual([])
    }
    // Panels are vital signs too: category finds both, code tells them apart.
    expect(matchIds(await search(nurse, `patient=${patient}&category=vital-signs`))).toEqual([
      first,
      ...rates.slice(0, 1),
      second,
      ...rates.slice(1),
      idOf(weight?.reference),
    ])
    const cases: [string, number[]][] = [
      [`patient=${patient}&code=8867-4&date=ge2024-01-15`, rates.slice(1)],
      [`patient=${patient}&code=8867-4&_sort=-date`, [...rates].reverse()],
      [`patient=${patient}&code=8867-4&status=final`, rates],
      [`patient=${patient}&code=8867-4&status=amended`, []],
      [`patient=${patient}&code=8867-4&_lastUpdated=ge2000-01-01`, rates],
      [`_id=${rates[0]}`, rates.slice(0, 1)],
      [`patient=${patient}&category=vital-signs&code=29463-7`, [idOf(weight?.reference)]],
    ]
    for (const [query, expected] of cases) {
      expect(matchIds(await search(nurse, query)), query).toEqual(expected)
    }
    // Paged one at a time, to the end.
    const paged: number[] = []
    let url: string | undefined = `/fhir/R4/Observation?patient=${patient}&code=8867-4&_count=1`
    while (url) {
      const page = expectFhir(await app.inject({ url, headers: bearer(nurse.token) })) as Bundle
      paged.push(...matchIds(page))
      const next = page.link?.find((link) => link.relation === 'next')?.url
      url = next ? next.slice(next.indexOf('/fhir/R4')) : undefined
    }
    expect(paged).toEqual(rates)
    const included = await search(nurse, `patient=${patient}&code=8867-4&_include=Observation:patient`)
    expect(
      (included.entry ?? []).filter((entry) => entry.search?.mode === 'include').map((e) => e.resource?.id),
    ).toEqual([String(patient)])
  })

  it('reads, vreads and keeps the history of a measurement as its panel is corrected', async () => {
    const { nurse, patient } = await practice()
    const id = await recordVitals(nurse, patient, { recordedAt: '2024-01-01T08:00:00Z', heartRate: 60 })
    const [rate] = (await read(nurse, `/Observation/${id}`)).hasMember ?? []
    const rateId = idOf(rate?.reference)
    const corrected = await app.inject({
      method: 'PUT',
      url: `/api/patients/${patient}/vitals/${id}`,
      headers: bearer(nurse.token),
      payload: { recordedAt: '2024-01-01T08:00:00Z', heartRate: 62 },
    })
    expect(corrected.statusCode).toBe(200)
    expect(await read(nurse, `/Observation/${rateId}`)).toMatchObject({
      status: 'amended',
      meta: { versionId: '2' },
      valueQuantity: { value: 62 },
    })
    expect(await read(nurse, `/Observation/${rateId}/_history/1`)).toMatchObject({
      status: 'final',
      valueQuantity: { value: 60 },
    })
    const history = expectFhir(await fhirGet(app, nurse, `/Observation/${rateId}/_history`)) as Bundle
    expect(history.entry?.map((entry) => (entry.resource as Observation).valueQuantity?.value)).toEqual([
      62, 60,
    ])
  })

  it('refuses writes of a measurement, telling to write its panel; the panel written back as read changes nothing', async () => {
    const { provider, patient } = await practice()
    const id = await recordVitals(provider, patient, { heartRate: 60, respiratoryRate: 12 })
    const panel = await read(provider, `/Observation/${id}`)
    const [rateReference, breathsReference] = panel.hasMember ?? []
    const rate = await read(provider, `/Observation/${idOf(rateReference?.reference)}`)
    const { id: _, meta: __, ...newRate } = rate
    const writes = [
      { method: 'PUT', url: `/fhir/R4/Observation/${rate.id}`, payload: rate },
      { method: 'POST', url: '/fhir/R4/Observation', payload: newRate },
      { method: 'DELETE', url: `/fhir/R4/Observation/${rate.id}` },
      {
        method: 'PATCH',
        url: `/fhir/R4/Observation/${rate.id}`,
        payload: [{ op: 'replace', path: '/valueQuantity/value', value: 61 }],
        type: 'application/json-patch+json',
      },
    ] as const
    for (const write of writes) {
      const response = await app.inject({
        method: write.method,
        url: write.url,
        headers: {
          ...bearer(provider.token),
          ...('payload' in write
            ? { 'content-type': 'type' in write ? write.type : 'application/fhir+json' }
            : {}),
        },
        ...('payload' in write ? { payload: JSON.stringify(write.payload) } : {}),
      })
      expect(response.statusCode, `${write.method} ${response.body}`).toBe(422)
      const outcome = expectFhir(response) as OperationOutcome
      expect(outcome.issue?.[0]?.diagnostics, write.method).toMatch(/vital signs panel/)
    }
    expect(await read(provider, `/Observation/${rate.id}`)).toEqual(rate)

    const put = (body: Observation) =>
      app.inject({
        method: 'PUT',
        url: `/fhir/R4/Observation/${id}`,
        headers: { ...bearer(provider.token), 'content-type': 'application/fhir+json' },
        payload: JSON.stringify(body),
      })
    const again = await put(panel)
    expect(again.statusCode, again.body).toBe(200)
    expect((again.json() as Observation).meta?.versionId).toBe('1')
    // A measurement the panel no longer references is removed: entered in error.
    const shorter = await put({ ...panel, status: 'amended', hasMember: [rateReference ?? {}] })
    expect(shorter.statusCode, shorter.body).toBe(200)
    expect((shorter.json() as Observation).hasMember).toEqual([rateReference])
    expect((await read(provider, `/Observation/${idOf(breathsReference?.reference)}`)).status).toBe(
      'entered-in-error',
    )
    expect((await read(provider, `/Observation/${rate.id}`)).meta?.versionId).toBe('1')
    const foreign = await put({ ...panel, hasMember: [{ reference: `Observation/${id}` }] })
    expect(foreign.statusCode).toBe(422)
    expect((expectFhir(foreign) as OperationOutcome).issue?.[0]?.expression).toEqual([
      'Observation.hasMember',
    ])
  })

  it('keeps measurements out of the REST vitals list and chart', async () => {
    const { nurse, patient } = await practice()
    const id = await recordVitals(nurse, patient, { heartRate: 60, weightKg: 70 })
    const list = await app.inject({ url: `/api/patients/${patient}/vitals`, headers: bearer(nurse.token) })
    expect(list.json().data.content.map((record: { id: number }) => record.id)).toEqual([id])
    const chart = await app.inject({ url: `/api/patients/${patient}/chart`, headers: bearer(nurse.token) })
    expect(chart.json().data.latestVitals.id).toBe(id)
  })

  it('exports each measurement in the Observation output, every hasMember resolving within it', async () => {
    const { provider, patient } = await practice()
    const id = await recordVitals(provider, patient, { heartRate: 60, weightKg: 70 })
    const { manifest } = await exported(app, provider, `/Patient/$export?_type=Observation`)
    const observations = (await exportedResources(app, provider, manifest)).get('Observation') ?? []
    const panel = observations.find((observation) => observation.id === String(id)) as Observation
    const exportedIds = new Set(observations.map((observation) => observation.id))
    expect(panel.hasMember).toHaveLength(2)
    for (const member of panel.hasMember ?? []) {
      expect(exportedIds.has(String(idOf(member.reference)))).toBe(true)
    }
  })
})
