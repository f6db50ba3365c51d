import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { buildTestApp } from '../../helpers/app.js'
import { bearer, daysFromToday, type TestUser } from '../../helpers/factories.js'
import { expectNoOpWrite } from '../../helpers/no-op-writes.js'
import { newPractice, type Practice } from '../../helpers/scheduling.js'

let app: App
let strictApp: App

beforeAll(async () => {
  app = await buildTestApp()
  strictApp = await buildTestApp({ REQUIRE_IF_MATCH: 'true' })
})
afterAll(async () => {
  await app.close()
  await strictApp.close()
})

const MERGE_PATCH = { 'content-type': 'application/merge-patch+json' }
const TODAY = daysFromToday(0)

interface Clinic extends Practice {
  doctor: TestUser
}

/** A practice whose provider record is linked to a PROVIDER user account. */
async function newClinic(on: App = app): Promise<Clinic> {
  const practice = await newPractice(on)
  const doctor = await practice.org.user('PROVIDER')
  await on.db
    .updateTable('providers')
    .set({ user_id: doctor.id })
    .where('id', '=', practice.provider.id)
    .execute()
  return { ...practice, doctor }
}

const note = {
  encounterDate: TODAY,
  encounterType: 'OFFICE_VISIT',
  chiefComplaint: 'Headache',
  soapNote: {
    subjective: 'Headache for three days',
    objective: 'BP 128/82',
    assessment: {
      text: 'Tension-type headache',
      diagnoses: [
        { icd10Code: 'G44.209', description: 'Tension-type headache, unspecified, not intractable' },
      ],
    },
    plan: 'Ibuprofen as needed',
  },
}

function send(
  user: TestUser,
  method: 'GET' | 'PUT' | 'PATCH' | 'POST',
  url: string,
  options: { payload?: object; headers?: Record<string, string>; on?: App } = {},
) {
  return (options.on ?? app).inject({
    method,
    url,
    headers: { ...bearer(user.token), ...options.headers },
    ...(options.payload ? { payload: options.payload } : {}),
  })
}

async function draft(clinic: Clinic, on: App = app) {
  const response = await send(clinic.doctor, 'POST', '/api/encounters', {
    payload: { patientId: clinic.patient.id, providerId: clinic.provider.id, ...note },
    on,
  })
  expect(response.statusCode, response.body).toBe(201)
  return response.json().data as { id: number; version: number; updatedAt: string }
}

describe('encounter versions', () => {
  it('GET and every write carry the ETag; each change raises the version by one', async () => {
    const clinic = await newClinic()
    const encounter = await draft(clinic)
    expect(encounter.version).toBe(1)
    const url = `/api/encounters/${encounter.id}`
    const read = await send(clinic.doctor, 'GET', url)
    expect(read.headers.etag).toBe('W/"1"')
    const put = await send(clinic.doctor, 'PUT', url, { payload: { ...note, chiefComplaint: 'Migraine' } })
    expect(put.statusCode, put.body).toBe(200)
    expect(put.headers.etag).toBe('W/"2"')
    const signed = await send(clinic.doctor, 'POST', `${url}/sign`)
    expect(signed.statusCode, signed.body).toBe(200)
    expect(signed.json().data).toMatchObject({ status: 'SIGNED', version: 3 })
    expect(signed.headers.etag).toBe('W/"3"')
    const amended = await send(clinic.doctor, 'POST', `${url}/addendum`, { payload: { text: 'Labs normal' } })
    expect(amended.statusCode, amended.body).toBe(200)
    expect(amended.json().data).toMatchObject({ status: 'AMENDED', version: 4 })
    expect(amended.headers.etag).toBe('W/"4"')
    const again = await send(clinic.doctor, 'POST', `${url}/addendum`, { payload: { text: 'Seen again' } })
    expect(again.statusCode, again.body).toBe(200)
    expect(again.json().data).toMatchObject({ status: 'AMENDED', version: 5 })
    expect(again.json().data.addenda).toHaveLength(2)
  })

  it('answers If-None-Match: current 304 without a body, stale 200', async () => {
    const clinic = await newClinic()
    const encounter = await draft(clinic)
    const url = `/api/encounters/${encounter.id}`
    const current = await send(clinic.doctor, 'GET', url, { headers: { 'if-none-match': 'W/"1"' } })
    expect(current.statusCode).toBe(304)
    expect(current.body).toBe('')
    await send(clinic.doctor, 'POST', `${url}/sign`)
    const stale = await send(clinic.doctor, 'GET', url, { headers: { 'if-none-match': 'W/"1"' } })
    expect(stale.statusCode).toBe(200)
    expect(stale.json().data.version).toBe(2)
  })

  it('refuses a stale If-Match on PUT, sign and addendum with 412 RES_003, leaving the encounter unchanged', async () => {
    const clinic = await newClinic()
    const encounter = await draft(clinic)
    const url = `/api/encounters/${encounter.id}`
    await send(clinic.doctor, 'PUT', url, { payload: { ...note, chiefComplaint: 'Migraine' } })

    const stalePut = await send(clinic.doctor, 'PUT', url, {
      payload: { ...note, chiefComplaint: 'Dizziness' },
      headers: { 'if-match': 'W/"1"' },
    })
    expect(stalePut.statusCode).toBe(412)
    expect(stalePut.json()).toMatchObject({ success: false, error: { code: 'RES_003' } })
    expect(JSON.stringify(stalePut.json().error.details)).toContain('2')
    // A signer signs the note as read: not one that changed since.
    const staleSign = await send(clinic.doctor, 'POST', `${url}/sign`, { headers: { 'if-match': 'W/"1"' } })
    expect(staleSign.statusCode).toBe(412)
    expect((await send(clinic.doctor, 'GET', url)).json().data).toMatchObject({
      chiefComplaint: 'Migraine',
      status: 'DRAFT',
      version: 2,
    })

    const signed = await send(clinic.doctor, 'POST', `${url}/sign`, { headers: { 'if-match': 'W/"2"' } })
    expect(signed.statusCode, signed.body).toBe(200)
    const staleAddendum = await send(clinic.doctor, 'POST', `${url}/addendum`, {
      payload: { text: 'Late' },
      headers: { 'if-match': 'W/"2"' },
    })
    expect(staleAddendum.statusCode).toBe(412)
    expect(staleAddendum.json().error.code).toBe('RES_003')
    expect((await send(clinic.doctor, 'GET', url)).json().data).toMatchObject({ addenda: [], version: 3 })
    const amended = await send(clinic.doctor, 'POST', `${url}/addendum`, {
      payload: { text: 'On time' },
      headers: { 'if-match': '"3"' },
    })
    expect(amended.statusCode, amended.body).toBe(200)
    expect(amended.json().data.version).toBe(4)
  })

  it('returns 428 without If-Match when the service requires it', async () => {
    const clinic = await newClinic(strictApp)
    const encounter = await draft(clinic, strictApp)
    const url = `/api/encounters/${encounter.id}`
    const put = await send(clinic.doctor, 'PUT', url, { payload: note, on: strictApp })
    expect(put.statusCode).toBe(428)
    const patch = await send(clinic.doctor, 'PATCH', url, {
      payload: { chiefComplaint: 'x' },
      headers: MERGE_PATCH,
      on: strictApp,
    })
    expect(patch.statusCode).toBe(428)
    const sign = await send(clinic.doctor, 'POST', `${url}/sign`, { on: strictApp })
    expect(sign.statusCode).toBe(428)
    const signed = await send(clinic.doctor, 'POST', `${url}/sign`, {
      headers: { 'if-match': 'W/"1"' },
      on: strictApp,
    })
    expect(signed.statusCode, signed.body).toBe(200)
    const addendum = await send(clinic.doctor, 'POST', `${url}/addendum`, {
      payload: { text: 'x' },
      on: strictApp,
    })
    expect(addendum.statusCode).toBe(428)
  })
})

describe('PUT and PATCH /api/encounters/:id that change nothing', () => {
  it('keep the version, ETag and updatedAt; If-Match is still checked; a real change still counts', async () => {
    const clinic = await newClinic()
    const encounter = await draft(clinic)
    const url = `/api/encounters/${encounter.id}`
    const read = () => send(clinic.doctor, 'GET', url)
    await expectNoOpWrite(app, clinic.org.id, read, () => send(clinic.doctor, 'PUT', url, { payload: note }))
    await expectNoOpWrite(app, clinic.org.id, read, () =>
      send(clinic.doctor, 'PATCH', url, { payload: {}, headers: { ...MERGE_PATCH, 'if-match': 'W/"1"' } }),
    )
    const stale = await send(clinic.doctor, 'PUT', url, { payload: note, headers: { 'if-match': 'W/"2"' } })
    expect(stale.statusCode).toBe(412)
    const changed = await send(clinic.doctor, 'PATCH', url, {
      payload: { chiefComplaint: 'Migraine' },
      headers: MERGE_PATCH,
    })
    expect(changed.statusCode, changed.body).toBe(200)
    expect(changed.headers.etag).toBe('W/"2"')
  })
})

describe('PATCH /api/encounters/:id', () => {
  it('merges nested members, removes those sent as null, replaces arrays and keeps the rest', async () => {
    const clinic = await newClinic()
    const encounter = await draft(clinic)
    const response = await send(clinic.doctor, 'PATCH', `/api/encounters/${encounter.id}`, {
      payload: {
        chiefComplaint: null,
        soapNote: {
          plan: null,
          assessment: { diagnoses: [{ icd10Code: 'R51.9', description: 'Headache, unspecified' }] },
        },
      },
      headers: { ...MERGE_PATCH, 'if-match': 'W/"1"' },
    })
    expect(response.statusCode, response.body).toBe(200)
    expect(response.headers.etag).toBe('W/"2"')
    expect(response.json().data).toMatchObject({
      encounterDate: TODAY,
      encounterType: 'OFFICE_VISIT',
      chiefComplaint: null,
      soapNote: {
        subjective: 'Headache for three days',
        objective: 'BP 128/82',
        assessment: {
          text: 'Tension-type headache',
          diagnoses: [{ icd10Code: 'R51.9', description: 'Headache, unspecified' }],
        },
        plan: null,
      },
      status: 'DRAFT',
      version: 2,
    })
  })

  it('refuses read-only members and an invalid merged note with 422, storing nothing', async () => {
    const clinic = await newClinic()
    const encounter = await draft(clinic)
    const url = `/api/encounters/${encounter.id}`
    for (const payload of [
      { version: 4 },
      { status: 'SIGNED' },
      { patientId: clinic.patient.id },
      { encounterDate: null },
      { soapNote: { assessment: { diagnoses: [{ icd10Code: 'nope', description: 'x' }] } } },
    ]) {
      const response = await send(clinic.doctor, 'PATCH', url, { payload, headers: MERGE_PATCH })
      expect(response.statusCode, JSON.stringify(payload)).toBe(422)
    }
    expect((await send(clinic.doctor, 'GET', url)).json().data).toMatchObject({
      version: 1,
      status: 'DRAFT',
      chiefComplaint: 'Headache',
    })
  })

  it('refuses a signed encounter with 409 and a stale If-Match with 412', async () => {
    const clinic = await newClinic()
    const encounter = await draft(clinic)
    const url = `/api/encounters/${encounter.id}`
    const stale = await send(clinic.doctor, 'PATCH', url, {
      payload: { chiefComplaint: 'x' },
      headers: { ...MERGE_PATCH, 'if-match': 'W/"5"' },
    })
    expect(stale.statusCode).toBe(412)
    await send(clinic.doctor, 'POST', `${url}/sign`)
    const signed = await send(clinic.doctor, 'PATCH', url, {
      payload: { chiefComplaint: 'x' },
      headers: MERGE_PATCH,
    })
    expect(signed.statusCode).toBe(409)
  })
})

describe('GET /api/encounters sync pages', () => {
  it('walks changed encounters once each in (updatedAt, id) order; one signed during the walk shows again', async () => {
    const since = new Date(Date.now() - 1000).toISOString()
    const clinic = await newClinic()
    const first = await draft(clinic)
    const second = await draft(clinic)
    const third = await draft(clinic)
    const items: { id: number; version: number; updatedAt: string; status: string }[] = []
    let response = await send(
      clinic.doctor,
      'GET',
      `/api/encounters?updatedSince=${encodeURIComponent(since)}&size=2`,
    )
    for (let page = 0; ; page++) {
      expect(response.statusCode, response.body).toBe(200)
      const data = response.json().data
      expect(data.nextCursor).toEqual(expect.any(String))
      items.push(...data.content)
      if (page === 0)
        expect((await send(clinic.doctor, 'POST', `/api/encounters/${first.id}/sign`)).statusCode).toBe(200)
      if (data.last) break
      response = await send(clinic.doctor, 'GET', `/api/encounters?cursor=${data.nextCursor}&size=2`)
    }
    expect(items.map((item) => item.id)).toEqual([first.id, second.id, third.id, first.id])
    expect(items.at(-1)).toMatchObject({ id: first.id, version: 2, status: 'SIGNED' })
    const keys = items.map((item) => `${item.updatedAt}|${String(item.id).padStart(10, '0')}`)
    expect(keys).toEqual([...keys].sort())
  })

  it('refuses a tampered cursor and a cursor with other filters with 400', async () => {
    const since = new Date(Date.now() - 1000).toISOString()
    const clinic = await newClinic()
    await draft(clinic)
    await draft(clinic)
    const page = await send(
      clinic.doctor,
      'GET',
      `/api/encounters?updatedSince=${encodeURIComponent(since)}&size=1`,
    )
    expect(page.statusCode).toBe(200)
    const cursor: string = page.json().data.nextCursor
    const other = await send(clinic.doctor, 'GET', `/api/encounters?cursor=${cursor}&size=1&status=DRAFT`)
    expect(other.statusCode).toBe(400)
    const [body, signature] = cursor.split('.')
    const tampered = await send(clinic.doctor, 'GET', `/api/encounters?cursor=${body}x.${signature}&size=1`)
    expect(tampered.statusCode).toBe(400)
    const withPage = await send(clinic.doctor, 'GET', `/api/encounters?cursor=${cursor}&size=1&page=2`)
    expect(withPage.statusCode).toBe(400)
  })
})
