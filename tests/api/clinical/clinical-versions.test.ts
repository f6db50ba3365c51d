import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { buildTestApp } from '../../helpers/app.js'
import { bearer, createPatient, newOrganization, type TestUser } from '../../helpers/factories.js'
import { expectNoOpWrite } from '../../helpers/no-op-writes.js'

let app: App
let organizationId: number
let provider: TestUser
let nurse: TestUser

beforeAll(async () => {
  app = await buildTestApp()
  const org = await newOrganization(app)
  organizationId = org.id
  provider = await org.user('PROVIDER')
  nurse = await org.user('NURSE')
})
afterAll(async () => {
  await app.close()
})

type Headers = Record<string, string>

const send = (method: 'POST' | 'PUT', url: string, payload: object, headers: Headers = {}) =>
  app.inject({ method, url, headers: { ...bearer(provider.token), ...headers }, payload })
const get = (url: string, headers: Headers = {}) =>
  app.inject({ url, headers: { ...bearer(provider.token), ...headers } })
const patch = (url: string, body: unknown, headers: Headers = {}) =>
  app.inject({
    method: 'PATCH',
    url,
    headers: { ...bearer(provider.token), 'content-type': 'application/merge-patch+json', ...headers },
    payload: JSON.stringify(body),
  })

const condition = {
  icd10Code: 'E11.9',
  description: 'Type 2 diabetes mellitus',
  onsetDate: '2019-04-01',
  severity: 'MODERATE',
  note: 'Diet controlled',
}

async function newCondition(body: object = condition) {
  const patientId = await createPatient(app, provider)
  const created = await send('POST', `/api/patients/${patientId}/conditions`, body)
  expect(created.statusCode).toBe(201)
  const id = created.json().data.id as number
  return { patientId, id, url: `/api/patients/${patientId}/conditions/${id}`, created }
}

describe('versions and ETags of clinical records', () => {
  it('starts at 1 and adds one on every change, corrections and entering in error alike, with the ETag', async () => {
    const { url, created } = await newCondition()
    expect(created.headers.etag).toBe('W/"1"')
    expect(created.json().data.version).toBe(1)
    expect((await get(url)).headers.etag).toBe('W/"1"')

    const corrected = await send('PUT', url, { ...condition, severity: 'SEVERE' })
    expect(corrected.statusCode).toBe(200)
    expect(corrected.json().data.version).toBe(2)
    expect(corrected.headers.etag).toBe('W/"2"')

    const withdrawn = await send('POST', `${url}/entered-in-error`, { reason: 'Wrong patient' })
    expect(withdrawn.statusCode).toBe(200)
    expect(withdrawn.json().data.version).toBe(3)
    expect(withdrawn.headers.etag).toBe('W/"3"')
    expect((await get(url)).json().data.version).toBe(3)
  })

  it('answers 304 without a body for a current If-None-Match, 200 once the record changed', async () => {
    const { url } = await newCondition()
    const notModified = await get(url, { 'if-none-match': 'W/"1"' })
    expect(notModified.statusCode).toBe(304)
    expect(notModified.body).toBe('')
    expect(notModified.headers.etag).toBe('W/"1"')
    await send('PUT', url, { ...condition, note: 'Insulin started' })
    const stale = await get(url, { 'if-none-match': 'W/"1"' })
    expect(stale.statusCode).toBe(200)
    expect(stale.json().data.version).toBe(2)
  })

  it('returns 412 RES_003 with the current version for a stale If-Match on PUT, and keeps the record', async () => {
    const { url } = await newCondition()
    expect(
      (await send('PUT', url, { ...condition, note: 'first' }, { 'if-match': 'W/"1"' })).statusCode,
    ).toBe(200)
    const stale = await send('PUT', url, { ...condition, note: 'second' }, { 'if-match': 'W/"1"' })
    expect(stale.statusCode).toBe(412)
    expect(stale.json().error.code).toBe('RES_003')
    expect(stale.json().error.details).toContain('current version is 2')
    const current = (await get(url)).json().data
    expect(current.note).toBe('first')
    expect(current.version).toBe(2)
    expect((await send('PUT', url, condition, { 'if-match': '"2"' })).statusCode).toBe(200)
  })

  it('returns 412 for a stale If-Match on entered-in-error and leaves the record in lists', async () => {
    const { url, patientId, id } = await newCondition()
    await send('PUT', url, { ...condition, note: 'Insulin started' })
    const stale = await send(
      'POST',
      `${url}/entered-in-error`,
      { reason: 'Duplicate' },
      { 'if-match': 'W/"1"' },
    )
    expect(stale.statusCode).toBe(412)
    expect(stale.json().error.details).toContain('current version is 2')
    expect((await get(url)).json().data.enteredInError).toBeNull()
    const listed = (await get(`/api/patients/${patientId}/conditions`)).json().data.content
    expect(listed.map((record: { id: number }) => record.id)).toEqual([id])
    const current = await send(
      'POST',
      `${url}/entered-in-error`,
      { reason: 'Duplicate' },
      { 'if-match': 'W/"2"' },
    )
    expect(current.statusCode).toBe(200)
    expect(current.json().data.enteredInError.reason).toBe('Duplicate')
  })

  it('returns 404 for a record of another patient even with If-Match', async () => {
    const { id } = await newCondition()
    const otherPatient = await createPatient(app, provider)
    const response = await send('PUT', `/api/patients/${otherPatient}/conditions/${id}`, condition, {
      'if-match': 'W/"1"',
    })
    expect(response.statusCode).toBe(404)
  })
})

describe('REQUIRE_IF_MATCH=true on clinical records', () => {
  it('returns 428 for PUT, PATCH and entered-in-error without If-Match, and accepts them with it', async () => {
    const strict = await buildTestApp({ REQUIRE_IF_MATCH: 'true' })
    try {
      const org = await newOrganization(strict)
      const doctor = await org.user('PROVIDER')
      const patientId = await createPatient(strict, doctor)
      const created = await strict.inject({
        method: 'POST',
        url: `/api/patients/${patientId}/conditions`,
        headers: bearer(doctor.token),
        payload: condition,
      })
      expect(created.statusCode).toBe(201)
      const url = `/api/patients/${patientId}/conditions/${created.json().data.id}`
      const attempts = [
        { method: 'PUT' as const, url, payload: condition },
        { method: 'PATCH' as const, url, payload: { note: null } },
        { method: 'POST' as const, url: `${url}/entered-in-error`, payload: { reason: 'Wrong patient' } },
      ]
      for (const attempt of attempts) {
        const response = await strict.inject({ ...attempt, headers: bearer(doctor.token) })
        expect(response.statusCode, attempt.method).toBe(428)
        expect(response.json().error.code).toBe('RES_003')
      }
      const withHeader = await strict.inject({
        method: 'PATCH',
        url,
        headers: { ...bearer(doctor.token), 'if-match': 'W/"1"' },
        payload: { note: null },
      })
      expect(withHeader.statusCode).toBe(200)
      expect(withHeader.json().data.version).toBe(2)
    } finally {
      await strict.close()
    }
  })
})

const measuredAt = new Date(Date.now() - 3 * 3600_000).toISOString()

/** A creation body of each kind, as a full correction would send it again. */
const RECORDS: [string, object, [string, unknown]][] = [
  [
    'vitals',
    {
      recordedAt: measuredAt,
      systolic: 120,
      diastolic: 80,
      temperature: { value: 98.6, unit: 'F' },
      heightCm: 180,
      weightKg: 81,
    },
    ['weightKg', 82],
  ],
  [
    'lab-results',
    { testCode: '2345-7', testName: 'Glucose', value: 95, unit: 'mg/dL', resultedAt: measuredAt },
    ['value', 96],
  ],
  ['conditions', condition, ['note', 'Reviewed']],
  [
    'allergies',
    {
      substance: 'Penicillin',
      category: 'MEDICATION',
      severity: 'MODERATE',
      reactions: [{ manifestation: 'Rash' }],
    },
    ['severity', 'SEVERE'],
  ],
  ['medications', { name: 'Atorvastatin', dose: 20, doseUnit: 'mg', frequency: 'Once daily' }, ['dose', 40]],
]

describe('PUT and PATCH of clinical records that change nothing', () => {
  it.each(RECORDS)(
    'keep the version, ETag and updatedAt of %s; a real change still counts',
    async (path, body, change) => {
      const patientId = await createPatient(app, provider)
      const created = await send('POST', `/api/patients/${patientId}/${path}`, body)
      expect(created.statusCode, created.body).toBe(201)
      const url = `/api/patients/${patientId}/${path}/${created.json().data.id}`
      await expectNoOpWrite(
        app,
        organizationId,
        () => get(url),
        () => send('PUT', url, body),
      )
      await expectNoOpWrite(
        app,
        organizationId,
        () => get(url),
        () => patch(url, {}, { 'if-match': 'W/"1"' }),
      )
      expect((await patch(url, {}, { 'if-match': 'W/"2"' })).statusCode).toBe(412)
      const changed = await send('PUT', url, { ...body, [change[0]]: change[1] })
      expect(changed.statusCode, changed.body).toBe(200)
      expect(changed.headers.etag).toBe('W/"2"')
      // A corrected record sent again as it now is changes nothing either.
      await expectNoOpWrite(
        app,
        organizationId,
        () => get(url),
        () => patch(url, {}),
      )
    },
  )
})

describe('PATCH of clinical records', () => {
  it('changes only the members sent and removes an optional one with null', async () => {
    const { url } = await newCondition()
    const response = await patch(url, { note: null, clinicalStatus: 'RESOLVED', abatementDate: '2024-01-02' })
    expect(response.statusCode).toBe(200)
    const record = response.json().data
    expect(record).toMatchObject({
      icd10Code: 'E11.9',
      description: 'Type 2 diabetes mellitus',
      onsetDate: '2019-04-01',
      severity: 'MODERATE',
      note: null,
      clinicalStatus: 'RESOLVED',
      abatementDate: '2024-01-02',
      version: 2,
    })
    expect(response.headers.etag).toBe('W/"2"')
    expect((await get(url)).json().data).toEqual(record)
  })

  it('merges nested objects and replaces arrays', async () => {
    const patientId = await createPatient(app, provider)
    const created = await send('POST', `/api/patients/${patientId}/allergies`, {
      substance: 'Penicillin',
      substanceCode: { system: 'RXNORM', code: '7980' },
      category: 'MEDICATION',
      reactions: [{ manifestation: 'Hives', severity: 'MILD' }, { manifestation: 'Itching' }],
      severity: 'MODERATE',
    })
    expect(created.statusCode).toBe(201)
    const url = `/api/patients/${patientId}/allergies/${created.json().data.id}`
    const response = await patch(url, {
      substanceCode: { code: '7981' },
      reactions: [{ manifestation: 'Anaphylaxis', severity: 'SEVERE' }],
    })
    expect(response.statusCode).toBe(200)
    const allergy = response.json().data
    expect(allergy.substanceCode).toEqual({ system: 'RXNORM', code: '7981' })
    expect(allergy.reactions).toEqual([{ manifestation: 'Anaphylaxis', severity: 'SEVERE' }])
    expect(allergy).toMatchObject({ substance: 'Penicillin', severity: 'MODERATE', status: 'ACTIVE' })
  })

  it('keeps what vital signs were measured and when, converting nothing twice', async () => {
    const patientId = await createPatient(app, provider)
    const measuredAt = new Date(Date.now() - 3 * 3600_000).toISOString()
    const created = await app.inject({
      method: 'POST',
      url: `/api/patients/${patientId}/vitals`,
      headers: bearer(nurse.token),
      payload: {
        recordedAt: measuredAt,
        systolic: 120,
        diastolic: 80,
        temperature: { value: 98.6, unit: 'F' },
        heightCm: 180,
        weightKg: 81,
      },
    })
    expect(created.statusCode).toBe(201)
    const url = `/api/patients/${patientId}/vitals/${created.json().data.id}`
    const response = await patch(url, { weightKg: 90, systolic: null })
    expect(response.statusCode).toBe(200)
    expect(response.json().data).toMatchObject({
      status: 'AMENDED',
      systolic: null,
      diastolic: 80,
      temperatureCelsius: 37,
      heightCm: 180,
      weightKg: 90,
      bmi: 27.8,
      version: 2,
    })
    const stored = await app.db
      .selectFrom('clinical_records')
      .select('effective_at')
      .where('id', '=', response.json().data.id)
      .executeTakeFirstOrThrow()
    expect(stored.effective_at.toISOString()).toBe(measuredAt)
  })

  it('returns 422 for read-only or unknown members and null on a required one, and stores nothing', async () => {
    const { url } = await newCondition()
    for (const body of [{ id: 5 }, { version: 9 }, { recordedBy: 1 }, { icd10Code: null }, ['a']]) {
      const response = await patch(url, body)
      expect(response.statusCode, JSON.stringify(body)).toBe(422)
      expect(response.json().success).toBe(false)
    }
    expect((await get(url)).json().data.version).toBe(1)
  })

  it('returns 422 when the merged record breaks a rule, and stores nothing', async () => {
    const { url } = await newCondition()
    const early = await patch(url, { abatementDate: '2018-01-01' })
    expect(early.statusCode).toBe(422)
    expect(early.json().error.details).toContain('abatementDate')
    const badCode = await patch(url, { icd10Code: 'not-a-code' })
    expect(badCode.statusCode).toBe(422)
    const current = (await get(url)).json().data
    expect(current.version).toBe(1)
    expect(current.abatementDate).toBeNull()
  })

  it('honours If-Match, and refuses a withdrawn record with 409', async () => {
    const { url } = await newCondition()
    const stale = await patch(url, { note: 'x' }, { 'if-match': 'W/"4"' })
    expect(stale.statusCode).toBe(412)
    expect(stale.json().error.details).toContain('current version is 1')
    expect((await patch(url, { note: 'x' }, { 'if-match': 'W/"1"' })).statusCode).toBe(200)
    await send('POST', `${url}/entered-in-error`, { reason: 'Wrong patient' })
    expect((await patch(url, { note: 'y' })).statusCode).toBe(409)
  })

  it('is refused to a nurse for a kind only providers write', async () => {
    const { url } = await newCondition()
    const response = await app.inject({
      method: 'PATCH',
      url,
      headers: bearer(nurse.token),
      payload: { note: 'x' },
    })
    expect(response.statusCode).toBe(403)
  })
})

interface SyncItem {
  id: number
  version: number
  updatedAt: string
  enteredInError: unknown
}

describe('GET /api/patients/{patientId}/conditions with updatedSince and cursor', () => {
  async function walk(
    patientId: number,
    start: string,
    size: number,
    between?: (page: number) => Promise<void>,
  ) {
    const seen: SyncItem[] = []
    const base = `/api/patients/${patientId}/conditions`
    let url = `${base}?updatedSince=${encodeURIComponent(start)}&size=${size}`
    for (let page = 0; page < 100; page++) {
      const response = await get(url)
      expect(response.statusCode).toBe(200)
      const data = response.json().data
      expect(data.totalElements).toBeUndefined()
      expect(typeof data.nextCursor).toBe('string')
      seen.push(...data.content)
      if (data.last) return { seen, cursor: data.nextCursor as string }
      await between?.(page)
      url = `${base}?cursor=${data.nextCursor}&size=${size}`
    }
    throw new Error('the walk did not end')
  }

  it('returns each record once in (updatedAt, id) order; a record changed during the walk comes again', async () => {
    const patientId = await createPatient(app, provider)
    const start = new Date(Date.now() - 60_000).toISOString()
    const ids: number[] = []
    for (let i = 0; i < 7; i++) {
      const created = await send('POST', `/api/patients/${patientId}/conditions`, {
        ...condition,
        icd10Code: `E1${i}.9`,
      })
      ids.push(created.json().data.id)
    }
    const [changed, withdrawn] = [ids[0] as number, ids[1] as number]
    const { seen } = await walk(patientId, start, 2, async (page) => {
      if (page !== 1) return
      await send('PUT', `/api/patients/${patientId}/conditions/${changed}`, condition)
      await send('POST', `/api/patients/${patientId}/conditions/${withdrawn}/entered-in-error`, {
        reason: 'Duplicate',
      })
    })
    for (const id of ids.slice(2)) expect(seen.filter((item) => item.id === id)).toHaveLength(1)
    expect(seen.filter((item) => item.id === changed).map((item) => item.version)).toEqual([1, 2])
    // A withdrawal is a change a copy must learn of, even though lists leave such records out.
    const last = seen.filter((item) => item.id === withdrawn).at(-1)
    expect(last?.version).toBe(2)
    expect(last?.enteredInError).not.toBeNull()
    const positions = seen.map((item) => `${item.updatedAt}|${String(item.id).padStart(10, '0')}`)
    expect([...positions].sort()).toEqual(positions)
  })

  it('resumes from the last cursor with only what changed since, and keeps to the patient', async () => {
    const patientId = await createPatient(app, provider)
    const otherPatient = await createPatient(app, provider)
    const start = new Date(Date.now() - 60_000).toISOString()
    const first = (await send('POST', `/api/patients/${patientId}/conditions`, condition)).json().data.id
    await send('POST', `/api/patients/${otherPatient}/conditions`, condition)
    const { seen, cursor } = await walk(patientId, start, 5)
    expect(seen.map((item) => item.id)).toEqual([first])
    await send('PUT', `/api/patients/${patientId}/conditions/${first}`, { ...condition, severity: 'MILD' })
    const resumed = await get(`/api/patients/${patientId}/conditions?cursor=${cursor}`)
    expect(resumed.statusCode).toBe(200)
    expect(resumed.json().data.content.map((item: SyncItem) => [item.id, item.version])).toEqual([[first, 2]])
    expect(resumed.json().data.first).toBe(false)
    // The cursor is bound to its patient: another patient's list refuses it.
    const elsewhere = await get(`/api/patients/${otherPatient}/conditions?cursor=${cursor}`)
    expect(elsewhere.statusCode).toBe(400)
  })

  it('returns 400 for a tampered cursor and a cursor sent with other filters', async () => {
    const patientId = await createPatient(app, provider)
    await send('POST', `/api/patients/${patientId}/conditions`, condition)
    await send('POST', `/api/patients/${patientId}/conditions`, { ...condition, icd10Code: 'I10' })
    const base = `/api/patients/${patientId}/conditions`
    const first = await get(`${base}?updatedSince=2000-01-01T00:00:00Z&size=1`)
    const cursor = first.json().data.nextCursor as string
    const [body, signature] = cursor.split('.') as [string, string]
    const forged = `${Buffer.from(
      Buffer.from(body, 'base64url')
        .toString()
        .replace(/"i":\d+/, '"i":0'),
    ).toString('base64url')}.${signature}`
    for (const url of [
      `${base}?cursor=${forged}`,
      `${base}?cursor=${cursor}&icd10Code=I10`,
      `${base}?cursor=${cursor}&sort=effectiveAt,desc`,
    ]) {
      const response = await get(url)
      expect(response.statusCode, url).toBe(400)
      expect(response.json().error.code).toBe('VAL_001')
    }
    expect((await get(`${base}?cursor=${cursor}`)).statusCode).toBe(200)
  })
})
