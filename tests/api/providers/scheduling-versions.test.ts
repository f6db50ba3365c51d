import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { buildTestApp } from '../../helpers/app.js'
import { bearer, daysFromToday, everyDay, providerBody, type TestUser } from '../../helpers/factories.js'
import { expectNoOpWrite } from '../../helpers/no-op-writes.js'
import { booked, createProvider, newPractice, outboxEvents } from '../../helpers/scheduling.js'

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

function send(
  user: TestUser,
  method: 'GET' | 'PUT' | 'PATCH' | 'POST' | 'DELETE',
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

const providerUpdate = (overrides: Record<string, unknown> = {}) => {
  const { weeklyHours: _hours, ...body } = providerBody(overrides)
  return body
}

/** Reads every sync page of a list from `updatedSince`, returning the items in order. */
async function walk(user: TestUser, path: string, since: string, size = 2, during?: () => Promise<void>) {
  const items: { id: number; version: number; updatedAt: string }[] = []
  let response = await send(user, 'GET', `${path}?updatedSince=${encodeURIComponent(since)}&size=${size}`)
  let pages = 0
  for (;;) {
    expect(response.statusCode, response.body).toBe(200)
    const data = response.json().data
    expect(data.nextCursor).toEqual(expect.any(String))
    expect(data.totalElements).toBeUndefined()
    items.push(...data.content)
    pages += 1
    if (pages === 1 && during) await during()
    if (data.last) break
    response = await send(user, 'GET', `${path}?cursor=${data.nextCursor}&size=${size}`)
  }
  return items
}

function expectSyncOrder(items: { id: number; updatedAt: string }[]) {
  const keys = items.map((item) => [item.updatedAt, item.id] as const)
  const sorted = [...keys].sort((a, b) => (a[0] === b[0] ? a[1] - b[1] : a[0] < b[0] ? -1 : 1))
  expect(keys).toEqual(sorted)
}

describe('provider versions', () => {
  it('GET carries the ETag of the version; each change raises it by one', async () => {
    const { admin, provider } = await newPractice(app)
    const read = await send(admin, 'GET', `/api/providers/${provider.id}`)
    expect(read.statusCode).toBe(200)
    expect(read.json().data.version).toBe(1)
    expect(read.headers.etag).toBe('W/"1"')

    const put = await send(admin, 'PUT', `/api/providers/${provider.id}`, {
      payload: providerUpdate({ specialty: 'Cardiology' }),
    })
    expect(put.statusCode, put.body).toBe(200)
    expect(put.json().data.version).toBe(2)
    expect(put.headers.etag).toBe('W/"2"')

    const hours = await send(admin, 'PUT', `/api/providers/${provider.id}/hours`, {
      payload: { weeklyHours: [{ dayOfWeek: 'MONDAY', startTime: '08:00:00', endTime: '12:00:00' }] },
    })
    expect(hours.statusCode, hours.body).toBe(200)
    expect(hours.json().data.version).toBe(3)
    expect(hours.headers.etag).toBe('W/"3"')

    const added = await send(admin, 'POST', `/api/providers/${provider.id}/exceptions`, {
      payload: { date: daysFromToday(10), kind: 'TIME_OFF' },
    })
    expect(added.statusCode, added.body).toBe(201)
    expect((await send(admin, 'GET', `/api/providers/${provider.id}`)).json().data.version).toBe(4)

    const removed = await send(
      admin,
      'DELETE',
      `/api/providers/${provider.id}/exceptions/${added.json().data.id}`,
    )
    expect(removed.statusCode, removed.body).toBe(200)
    expect((await send(admin, 'GET', `/api/providers/${provider.id}`)).json().data.version).toBe(5)
  })

  it('answers a current If-None-Match with 304 and no body, a stale one with 200', async () => {
    const { admin, provider } = await newPractice(app)
    const current = await send(admin, 'GET', `/api/providers/${provider.id}`, {
      headers: { 'if-none-match': 'W/"1"' },
    })
    expect(current.statusCode).toBe(304)
    expect(current.body).toBe('')
    expect(current.headers.etag).toBe('W/"1"')
    await send(admin, 'PUT', `/api/providers/${provider.id}`, { payload: providerUpdate() })
    const stale = await send(admin, 'GET', `/api/providers/${provider.id}`, {
      headers: { 'if-none-match': 'W/"1"' },
    })
    expect(stale.statusCode).toBe(200)
    expect(stale.json().data.version).toBe(2)
  })

  it('refuses a stale If-Match with 412 RES_003 and the current version, leaving the provider unchanged', async () => {
    const { admin, provider } = await newPractice(app)
    await send(admin, 'PUT', `/api/providers/${provider.id}`, {
      payload: providerUpdate({ lastName: 'Lovelace' }),
    })
    const stale = await send(admin, 'PUT', `/api/providers/${provider.id}`, {
      payload: providerUpdate({ lastName: 'Curie' }),
      headers: { 'if-match': 'W/"1"' },
    })
    expect(stale.statusCode).toBe(412)
    expect(stale.json()).toMatchObject({ success: false, error: { code: 'RES_003' } })
    expect(JSON.stringify(stale.json().error.details)).toContain('2')
    const read = (await send(admin, 'GET', `/api/providers/${provider.id}`)).json().data
    expect(read).toMatchObject({ lastName: 'Lovelace', version: 2 })

    const current = await send(admin, 'PUT', `/api/providers/${provider.id}`, {
      payload: providerUpdate({ lastName: 'Curie' }),
      headers: { 'if-match': 'W/"2"' },
    })
    expect(current.statusCode, current.body).toBe(200)
    expect(current.json().data).toMatchObject({ lastName: 'Curie', version: 3 })
  })

  it('checks If-Match on the schedule writes against the provider’s version', async () => {
    const { admin, provider } = await newPractice(app)
    const hours = { weeklyHours: [{ dayOfWeek: 'TUESDAY', startTime: '09:00:00', endTime: '10:00:00' }] }
    const staleHours = await send(admin, 'PUT', `/api/providers/${provider.id}/hours`, {
      payload: hours,
      headers: { 'if-match': '"7"' },
    })
    expect(staleHours.statusCode).toBe(412)
    expect(staleHours.json().error.code).toBe('RES_003')
    const before = (await send(admin, 'GET', `/api/providers/${provider.id}`)).json().data
    expect(before.version).toBe(1)
    expect(before.weeklyHours).toHaveLength(7)

    const exception = { date: daysFromToday(5), kind: 'TIME_OFF' }
    const staleAdd = await send(admin, 'POST', `/api/providers/${provider.id}/exceptions`, {
      payload: exception,
      headers: { 'if-match': 'W/"2"' },
    })
    expect(staleAdd.statusCode).toBe(412)
    const added = await send(admin, 'POST', `/api/providers/${provider.id}/exceptions`, {
      payload: exception,
      headers: { 'if-match': 'W/"1"' },
    })
    expect(added.statusCode, added.body).toBe(201)

    const url = `/api/providers/${provider.id}/exceptions/${added.json().data.id}`
    const staleRemove = await send(admin, 'DELETE', url, { headers: { 'if-match': 'W/"1"' } })
    expect(staleRemove.statusCode).toBe(412)
    expect(staleRemove.json().error.code).toBe('RES_003')
    const removed = await send(admin, 'DELETE', url, { headers: { 'if-match': 'W/"2"' } })
    expect(removed.statusCode, removed.body).toBe(200)

    const replaced = await send(admin, 'PUT', `/api/providers/${provider.id}/hours`, {
      payload: hours,
      headers: { 'if-match': 'W/"3"' },
    })
    expect(replaced.statusCode, replaced.body).toBe(200)
    expect(replaced.json().data).toMatchObject({ version: 4, weeklyHours: hours.weeklyHours })
  })

  it('returns 428 without If-Match when the service requires it', async () => {
    const { admin, provider } = await newPractice(strictApp)
    const put = await send(admin, 'PUT', `/api/providers/${provider.id}`, {
      payload: providerUpdate(),
      on: strictApp,
    })
    expect(put.statusCode).toBe(428)
    expect(put.json().error.code).toBe('RES_003')
    const hours = await send(admin, 'PUT', `/api/providers/${provider.id}/hours`, {
      payload: { weeklyHours: [] },
      on: strictApp,
    })
    expect(hours.statusCode).toBe(428)
    const exception = await send(admin, 'POST', `/api/providers/${provider.id}/exceptions`, {
      payload: { date: daysFromToday(5), kind: 'TIME_OFF' },
      on: strictApp,
    })
    expect(exception.statusCode).toBe(428)
    const patch = await send(admin, 'PATCH', `/api/providers/${provider.id}`, {
      payload: { specialty: 'Cardiology' },
      headers: MERGE_PATCH,
      on: strictApp,
    })
    expect(patch.statusCode).toBe(428)
    expect(
      (await send(admin, 'GET', `/api/providers/${provider.id}`, { on: strictApp })).json().data.version,
    ).toBe(1)
  })
})

describe('PUT and PATCH /api/providers/:id that change nothing', () => {
  it('keep the version, ETag and updatedAt for the same record, an empty patch and the same hours', async () => {
    const { org, admin } = await newPractice(app)
    const body = providerUpdate({ email: 'grace@example.org' })
    const created = await send(admin, 'POST', '/api/providers', {
      payload: { ...body, weeklyHours: everyDay(['09:00', '12:00'], ['13:00', '17:00']) },
    })
    expect(created.statusCode, created.body).toBe(201)
    const url = `/api/providers/${created.json().data.id}`
    const read = () => send(admin, 'GET', url)
    await expectNoOpWrite(app, org.id, read, () => send(admin, 'PUT', url, { payload: body }))
    await expectNoOpWrite(app, org.id, read, () =>
      send(admin, 'PATCH', url, { payload: {}, headers: { ...MERGE_PATCH, 'if-match': 'W/"1"' } }),
    )
    await expectNoOpWrite(app, org.id, read, () =>
      send(admin, 'PUT', `${url}/hours`, {
        payload: { weeklyHours: everyDay(['13:00', '17:00'], ['09:00', '12:00']) },
      }),
    )
    const stale = await send(admin, 'PUT', url, { payload: body, headers: { 'if-match': 'W/"2"' } })
    expect(stale.statusCode).toBe(412)

    const changed = await send(admin, 'PUT', url, { payload: { ...body, title: 'DO' } })
    expect(changed.statusCode, changed.body).toBe(200)
    expect(changed.headers.etag).toBe('W/"2"')
    const hours = await send(admin, 'PUT', `${url}/hours`, {
      payload: { weeklyHours: everyDay(['09:00', '17:00']) },
    })
    expect(hours.statusCode, hours.body).toBe(200)
    expect(hours.json().data.version).toBe(3)
  })
})

describe('PATCH /api/providers/:id', () => {
  it('changes the members sent, removes those sent as null and keeps the rest', async () => {
    const { admin, provider } = await newPractice(app, {
      email: 'grace@example.org',
      phoneNumber: '+1 555 010 1234',
    })
    const response = await send(admin, 'PATCH', `/api/providers/${provider.id}`, {
      payload: { specialty: 'Cardiology', email: null },
      headers: { ...MERGE_PATCH, 'if-match': 'W/"1"' },
    })
    expect(response.statusCode, response.body).toBe(200)
    expect(response.headers.etag).toBe('W/"2"')
    expect(response.json().data).toMatchObject({
      specialty: 'Cardiology',
      email: null,
      phoneNumber: '+1 555 010 1234',
      firstName: 'Grace',
      title: 'MD',
      slotMinutes: 30,
      version: 2,
    })
    expect(response.json().data.weeklyHours).toHaveLength(7)
  })

  it('refuses read-only members and an invalid merged record with 422, storing nothing', async () => {
    const { admin, provider } = await newPractice(app)
    for (const payload of [{ version: 5 }, { id: 9 }, { weeklyHours: [] }]) {
      const response = await send(admin, 'PATCH', `/api/providers/${provider.id}`, {
        payload,
        headers: MERGE_PATCH,
      })
      expect(response.statusCode, JSON.stringify(payload)).toBe(422)
    }
    const badNpi = await send(admin, 'PATCH', `/api/providers/${provider.id}`, {
      payload: { npi: '1234567890' },
      headers: MERGE_PATCH,
    })
    expect(badNpi.statusCode).toBe(422)
    const required = await send(admin, 'PATCH', `/api/providers/${provider.id}`, {
      payload: { lastName: null },
      headers: MERGE_PATCH,
    })
    expect(required.statusCode).toBe(422)
    expect((await send(admin, 'GET', `/api/providers/${provider.id}`)).json().data).toMatchObject({
      lastName: 'Hopper',
      version: 1,
    })
  })

  it('refuses a stale If-Match with 412', async () => {
    const { admin, provider } = await newPractice(app)
    const response = await send(admin, 'PATCH', `/api/providers/${provider.id}`, {
      payload: { specialty: 'Cardiology' },
      headers: { ...MERGE_PATCH, 'if-match': 'W/"3"' },
    })
    expect(response.statusCode).toBe(412)
    expect(response.json().error.code).toBe('RES_003')
  })
})

describe('GET /api/providers sync pages', () => {
  it('walks changed providers once each in (updatedAt, id) order; one changed during the walk shows again', async () => {
    const since = new Date(Date.now() - 1000).toISOString()
    const { admin, provider } = await newPractice(app)
    const second = await createProvider(app, admin)
    const third = await createProvider(app, admin)
    const items = await walk(admin, '/api/providers', since, 2, async () => {
      await send(admin, 'PUT', `/api/providers/${provider.id}`, {
        payload: providerUpdate({ lastName: 'Moved' }),
      })
    })
    expectSyncOrder(items)
    expect(items.map((item) => item.id)).toEqual([provider.id, second.id, third.id, provider.id])
    expect(items.at(-1)).toMatchObject({ id: provider.id, version: 2, lastName: 'Moved' })
  })

  it('refuses a tampered cursor and a cursor with other filters with 400', async () => {
    const since = new Date(Date.now() - 1000).toISOString()
    const { admin } = await newPractice(app)
    await createProvider(app, admin)
    const first = await send(admin, 'GET', `/api/providers?updatedSince=${encodeURIComponent(since)}&size=1`)
    expect(first.statusCode).toBe(200)
    const cursor: string = first.json().data.nextCursor
    const tampered = `${cursor.slice(0, -2)}${cursor.endsWith('AA') ? 'BB' : 'AA'}`
    const bad = await send(admin, 'GET', `/api/providers?cursor=${tampered}&size=1`)
    expect(bad.statusCode).toBe(400)
    const otherFilters = await send(admin, 'GET', `/api/providers?cursor=${cursor}&size=1&active=true`)
    expect(otherFilters.statusCode).toBe(400)
    const same = await send(admin, 'GET', `/api/providers?cursor=${cursor}&size=1`)
    expect(same.statusCode).toBe(200)
  })
})

describe('appointment versions', () => {
  const DATE = daysFromToday(7)

  it('GET, PUT and cancel carry the ETag; each change raises the version by one', async () => {
    const practice = await newPractice(app)
    const appointment = await booked(app, practice, DATE, '10:00:00')
    expect(appointment.version).toBe(1)
    const url = `/api/appointments/${appointment.id}`
    const read = await send(practice.nurse, 'GET', url)
    expect(read.headers.etag).toBe('W/"1"')
    const put = await send(practice.nurse, 'PUT', url, { payload: { status: 'CONFIRMED' } })
    expect(put.statusCode, put.body).toBe(200)
    expect(put.headers.etag).toBe('W/"2"')
    const cancelled = await send(practice.nurse, 'POST', `${url}/cancel`, { payload: { reason: 'Ill' } })
    expect(cancelled.statusCode, cancelled.body).toBe(200)
    expect(cancelled.json().data).toMatchObject({ status: 'CANCELLED', version: 3 })
    expect(cancelled.headers.etag).toBe('W/"3"')
  })

  it('answers If-None-Match: current 304, stale 200', async () => {
    const practice = await newPractice(app)
    const appointment = await booked(app, practice, DATE, '10:00:00')
    const url = `/api/appointments/${appointment.id}`
    const current = await send(practice.nurse, 'GET', url, { headers: { 'if-none-match': 'W/"1"' } })
    expect(current.statusCode).toBe(304)
    expect(current.body).toBe('')
    await send(practice.nurse, 'PUT', url, { payload: { notes: 'Fasting' } })
    const stale = await send(practice.nurse, 'GET', url, { headers: { 'if-none-match': 'W/"1"' } })
    expect(stale.statusCode).toBe(200)
    expect(stale.json().data).toMatchObject({ notes: 'Fasting', version: 2 })
  })

  it('refuses a stale If-Match on PUT and cancel with 412, leaving the appointment unchanged', async () => {
    const practice = await newPractice(app)
    const appointment = await booked(app, practice, DATE, '10:00:00')
    const url = `/api/appointments/${appointment.id}`
    await send(practice.nurse, 'PUT', url, { payload: { notes: 'First' } })
    const stalePut = await send(practice.nurse, 'PUT', url, {
      payload: { appointmentTime: '11:00:00' },
      headers: { 'if-match': 'W/"1"' },
    })
    expect(stalePut.statusCode).toBe(412)
    expect(stalePut.json()).toMatchObject({ success: false, error: { code: 'RES_003' } })
    expect(JSON.stringify(stalePut.json().error.details)).toContain('2')
    const staleCancel = await send(practice.nurse, 'POST', `${url}/cancel`, {
      headers: { 'if-match': 'W/"1"' },
    })
    expect(staleCancel.statusCode).toBe(412)
    expect((await send(practice.nurse, 'GET', url)).json().data).toMatchObject({
      appointmentTime: '10:00:00',
      status: 'SCHEDULED',
      version: 2,
    })
    const moved = await send(practice.nurse, 'PUT', url, {
      payload: { appointmentTime: '11:00:00' },
      headers: { 'if-match': 'W/"2"' },
    })
    expect(moved.statusCode, moved.body).toBe(200)
    const cancelled = await send(practice.nurse, 'POST', `${url}/cancel`, {
      headers: { 'if-match': 'W/"3"' },
    })
    expect(cancelled.statusCode, cancelled.body).toBe(200)
    expect(cancelled.json().data).toMatchObject({ status: 'CANCELLED', version: 4 })
  })

  it('returns 428 without If-Match when the service requires it', async () => {
    const practice = await newPractice(strictApp)
    const appointment = await booked(strictApp, practice, DATE, '10:00:00')
    const url = `/api/appointments/${appointment.id}`
    const put = await send(practice.nurse, 'PUT', url, { payload: { notes: 'x' }, on: strictApp })
    expect(put.statusCode).toBe(428)
    const cancel = await send(practice.nurse, 'POST', `${url}/cancel`, { on: strictApp })
    expect(cancel.statusCode).toBe(428)
    const withHeader = await send(practice.nurse, 'POST', `${url}/cancel`, {
      headers: { 'if-match': 'W/"1"' },
      on: strictApp,
    })
    expect(withHeader.statusCode, withHeader.body).toBe(200)
  })
})

describe('PUT and PATCH /api/appointments/:id that change nothing', () => {
  const DATE = daysFromToday(7)

  it('keep the version, ETag and updatedAt and emit no appointment.updated', async () => {
    const practice = await newPractice(app)
    const appointment = await booked(app, practice, DATE, '10:00:00', {
      reason: 'Check-up',
      notes: 'Fasting',
    })
    const url = `/api/appointments/${appointment.id}`
    const read = () => send(practice.nurse, 'GET', url)
    const same = { appointmentTime: '10:00:00', reason: 'Check-up', notes: 'Fasting', status: 'SCHEDULED' }
    await expectNoOpWrite(app, practice.org.id, read, () =>
      send(practice.nurse, 'PUT', url, { payload: same }),
    )
    await expectNoOpWrite(app, practice.org.id, read, () =>
      send(practice.nurse, 'PATCH', url, { payload: {}, headers: MERGE_PATCH }),
    )
    const stale = await send(practice.nurse, 'PATCH', url, {
      payload: {},
      headers: { ...MERGE_PATCH, 'if-match': 'W/"2"' },
    })
    expect(stale.statusCode).toBe(412)

    const changed = await send(practice.nurse, 'PUT', url, { payload: { ...same, notes: 'Not fasting' } })
    expect(changed.statusCode, changed.body).toBe(200)
    expect(changed.headers.etag).toBe('W/"2"')
    expect((await outboxEvents(app, practice.org.id)).map((event) => event.event_type)).toEqual([
      'patient.created',
      'appointment.created',
      'appointment.updated',
    ])
  })
})

describe('PATCH /api/appointments/:id', () => {
  const DATE = daysFromToday(7)

  it('changes the members sent, clears one sent as null and keeps the rest', async () => {
    const practice = await newPractice(app)
    const appointment = await booked(app, practice, DATE, '10:00:00', {
      reason: 'Check-up',
      notes: 'Fasting',
    })
    const response = await send(practice.nurse, 'PATCH', `/api/appointments/${appointment.id}`, {
      payload: { notes: null, priority: 'URGENT' },
      headers: { ...MERGE_PATCH, 'if-match': 'W/"1"' },
    })
    expect(response.statusCode, response.body).toBe(200)
    expect(response.headers.etag).toBe('W/"2"')
    expect(response.json().data).toMatchObject({
      notes: null,
      priority: 'URGENT',
      reason: 'Check-up',
      appointmentTime: '10:00:00',
      status: 'SCHEDULED',
      version: 2,
    })
  })

  it('reschedules and changes status under the PUT rules', async () => {
    const practice = await newPractice(app)
    const appointment = await booked(app, practice, DATE, '10:00:00')
    const url = `/api/appointments/${appointment.id}`
    const moved = await send(practice.nurse, 'PATCH', url, {
      payload: { appointmentTime: '14:00:00', status: 'CONFIRMED' },
      headers: MERGE_PATCH,
    })
    expect(moved.statusCode, moved.body).toBe(200)
    expect(moved.json().data).toMatchObject({ appointmentTime: '14:00:00', status: 'CONFIRMED' })
    const illegal = await send(practice.nurse, 'PATCH', url, {
      payload: { status: 'COMPLETED' },
      headers: MERGE_PATCH,
    })
    expect(illegal.statusCode).toBe(409)
    const cancel = await send(practice.nurse, 'PATCH', url, {
      payload: { status: 'CANCELLED' },
      headers: MERGE_PATCH,
    })
    expect(cancel.statusCode).toBe(422)
  })

  it('edits the notes of a cancelled appointment without touching its status', async () => {
    const practice = await newPractice(app)
    const appointment = await booked(app, practice, DATE, '10:00:00')
    const url = `/api/appointments/${appointment.id}`
    await send(practice.nurse, 'POST', `${url}/cancel`)
    const response = await send(practice.nurse, 'PATCH', url, {
      payload: { notes: 'Called back' },
      headers: MERGE_PATCH,
    })
    expect(response.statusCode, response.body).toBe(200)
    expect(response.json().data).toMatchObject({ status: 'CANCELLED', notes: 'Called back', version: 3 })
  })

  it('refuses read-only members and an invalid merged record with 422, storing nothing', async () => {
    const practice = await newPractice(app)
    const appointment = await booked(app, practice, DATE, '10:00:00')
    const url = `/api/appointments/${appointment.id}`
    for (const payload of [
      { version: 3 },
      { patientId: practice.patient.id },
      { duration: 7 },
      { appointmentTime: null },
    ]) {
      const response = await send(practice.nurse, 'PATCH', url, { payload, headers: MERGE_PATCH })
      expect(response.statusCode, JSON.stringify(payload)).toBe(422)
    }
    expect((await send(practice.nurse, 'GET', url)).json().data).toMatchObject({ version: 1, duration: 30 })
  })

  it('refuses a stale If-Match with 412', async () => {
    const practice = await newPractice(app)
    const appointment = await booked(app, practice, DATE, '10:00:00')
    const response = await send(practice.nurse, 'PATCH', `/api/appointments/${appointment.id}`, {
      payload: { notes: 'x' },
      headers: { ...MERGE_PATCH, 'if-match': 'W/"2"' },
    })
    expect(response.statusCode).toBe(412)
    expect(response.json().error.code).toBe('RES_003')
  })
})

describe('GET /api/appointments sync pages', () => {
  it('walks changed appointments once each in (updatedAt, id) order; one changed during the walk shows again', async () => {
    const since = new Date(Date.now() - 1000).toISOString()
    const practice = await newPractice(app)
    const date = daysFromToday(8)
    const first = await booked(app, practice, date, '09:00:00')
    const second = await booked(app, practice, date, '10:00:00')
    const third = await booked(app, practice, date, '11:00:00')
    const items = await walk(practice.nurse, '/api/appointments', since, 2, async () => {
      const cancel = await send(practice.nurse, 'POST', `/api/appointments/${first.id}/cancel`)
      expect(cancel.statusCode).toBe(200)
    })
    expectSyncOrder(items)
    expect(items.map((item) => item.id)).toEqual([first.id, second.id, third.id, first.id])
    expect(items.at(-1)).toMatchObject({ id: first.id, version: 2, status: 'CANCELLED' })
  })

  it('keeps the filters on a sync walk and refuses a cursor with other filters or tampered', async () => {
    const since = new Date(Date.now() - 1000).toISOString()
    const practice = await newPractice(app)
    const date = daysFromToday(8)
    await booked(app, practice, date, '09:00:00')
    await booked(app, practice, date, '10:00:00')
    const other = await createProvider(app, practice.admin)
    const otherAppointment = await booked(app, { ...practice, provider: other }, date, '09:00:00')
    const filtered = await send(
      practice.nurse,
      'GET',
      `/api/appointments?updatedSince=${encodeURIComponent(since)}&providerId=${other.id}`,
    )
    expect(filtered.statusCode).toBe(200)
    expect(filtered.json().data.content.map((item: { id: number }) => item.id)).toEqual([otherAppointment.id])

    const page = await send(
      practice.nurse,
      'GET',
      `/api/appointments?updatedSince=${encodeURIComponent(since)}&size=1`,
    )
    const cursor: string = page.json().data.nextCursor
    const wrong = await send(
      practice.nurse,
      'GET',
      `/api/appointments?cursor=${cursor}&size=1&status=SCHEDULED`,
    )
    expect(wrong.statusCode).toBe(400)
    const tampered = await send(practice.nurse, 'GET', `/api/appointments?cursor=x${cursor.slice(1)}&size=1`)
    expect(tampered.statusCode).toBe(400)
  })
})
