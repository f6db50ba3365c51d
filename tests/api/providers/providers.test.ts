import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { buildTestApp } from '../../helpers/app.js'
import {
  bearer,
  daysFromToday,
  everyDay,
  newOrganization,
  providerBody,
  type TestUser,
  uniqueNpi,
} from '../../helpers/factories.js'
import { booked, createProvider, newPractice } from '../../helpers/scheduling.js'

let app: App

beforeAll(async () => {
  app = await buildTestApp()
})
afterAll(async () => {
  await app.close()
})

const post = (user: TestUser, payload: object) =>
  app.inject({ method: 'POST', url: '/api/providers', headers: bearer(user.token), payload })

describe('POST /api/providers', () => {
  it('returns 201 with defaults, the canonical time zone and the weekly hours in order', async () => {
    const admin = await (await newOrganization(app)).user('ADMIN')
    const npi = uniqueNpi()
    const response = await post(admin, {
      firstName: 'Ada',
      lastName: 'Lovelace',
      npi,
      timeZone: 'US/Eastern',
      weeklyHours: [
        { dayOfWeek: 'TUESDAY', startTime: '13:00:00', endTime: '17:00:00' },
        { dayOfWeek: 'MONDAY', startTime: '09:00:00', endTime: '12:00:00' },
        { dayOfWeek: 'TUESDAY', startTime: '08:00:00', endTime: '12:00:00' },
      ],
    })
    expect(response.statusCode).toBe(201)
    expect(response.json().data).toMatchObject({
      firstName: 'Ada',
      lastName: 'Lovelace',
      title: null,
      specialty: null,
      npi,
      email: null,
      active: true,
      timeZone: 'America/New_York',
      slotMinutes: 30,
      userId: null,
      weeklyHours: [
        { dayOfWeek: 'MONDAY', startTime: '09:00:00', endTime: '12:00:00' },
        { dayOfWeek: 'TUESDAY', startTime: '08:00:00', endTime: '12:00:00' },
        { dayOfWeek: 'TUESDAY', startTime: '13:00:00', endTime: '17:00:00' },
      ],
    })
  })

  it.each([
    ['an NPI with a wrong check digit', { npi: '1234567890' }, 'npi fails the NPI check digit'],
    ['an NPI of 9 digits', { npi: '123456789' }, 'npi'],
    ['an unknown time zone', { timeZone: 'Mars/Olympus_Mons' }, 'timeZone Mars/Olympus_Mons is not a known'],
    ['a UTC offset as time zone', { timeZone: '+01:00' }, 'timeZone'],
    ['a slot length off the 5-minute grid', { slotMinutes: 17 }, 'slotMinutes'],
    ['a slot length under 15 minutes', { slotMinutes: 10 }, 'slotMinutes'],
    [
      'hours ending before they start',
      { weeklyHours: [{ dayOfWeek: 'MONDAY', startTime: '17:00:00', endTime: '09:00:00' }] },
      'weeklyHours.0.endTime must be after startTime',
    ],
    [
      'overlapping hours on one day',
      {
        weeklyHours: [
          { dayOfWeek: 'MONDAY', startTime: '09:00:00', endTime: '12:00:00' },
          { dayOfWeek: 'MONDAY', startTime: '11:00:00', endTime: '13:00:00' },
        ],
      },
      'weeklyHours.0 overlaps weeklyHours.1',
    ],
    [
      'a time past midnight',
      { weeklyHours: [{ dayOfWeek: 'MONDAY', startTime: '09:00:00', endTime: '24:30:00' }] },
      'weeklyHours.0.endTime',
    ],
  ])('returns 422 for %s', async (_label, change, details) => {
    const admin = await (await newOrganization(app)).user('ADMIN')
    const response = await post(admin, providerBody(change))
    expect(response.statusCode).toBe(422)
    expect(response.json().error.code).toBe('VAL_001')
    expect(response.json().error.details).toContain(details)
  })

  it('returns 409 for an NPI already used in the organization, but accepts it in another', async () => {
    const admin = await (await newOrganization(app)).user('ADMIN')
    const npi = uniqueNpi()
    expect((await post(admin, providerBody({ npi }))).statusCode).toBe(201)
    const again = await post(admin, providerBody({ npi }))
    expect(again.statusCode).toBe(409)
    expect(again.json().error).toEqual({
      code: 'RES_002',
      details: 'A provider with this NPI already exists in this organization',
      fields: [{ path: 'npi', message: 'is already used by another provider of this organization' }],
    })
    const elsewhere = await (await newOrganization(app)).user('ADMIN')
    expect((await post(elsewhere, providerBody({ npi }))).statusCode).toBe(201)
  })

  it('links a user account of the organization once, and no user of another organization', async () => {
    const org = await newOrganization(app)
    const admin = await org.user('ADMIN')
    const doctor = await org.user('PROVIDER')
    const linked = await post(admin, providerBody({ userId: doctor.id }))
    expect(linked.statusCode).toBe(201)
    expect(linked.json().data.userId).toBe(doctor.id)
    const twice = await post(admin, providerBody({ userId: doctor.id }))
    expect(twice.statusCode).toBe(409)
    expect(twice.json().error.details).toBe('This user account is already linked to another provider')
    const stranger = await (await newOrganization(app)).user('PROVIDER')
    const foreign = await post(admin, providerBody({ userId: stranger.id }))
    expect(foreign.statusCode).toBe(422)
    expect(foreign.json().error.details).toBe('userId is not a user of this organization')
  })

  it('is ADMIN only', async () => {
    const org = await newOrganization(app)
    for (const role of ['PROVIDER', 'NURSE', 'FRONT_DESK'] as const) {
      expect((await post(await org.user(role), providerBody())).statusCode, role).toBe(403)
    }
  })
})

describe('GET /api/providers', () => {
  it('lists the organization’s providers with filters and sorts, for any staff role', async () => {
    const org = await newOrganization(app)
    const admin = await org.user('ADMIN')
    const a = await createProvider(app, admin, { lastName: 'Zhang', specialty: 'Cardiology' })
    const b = await createProvider(app, admin, { lastName: 'adams', specialty: 'cardiology', active: false })
    const c = await createProvider(app, admin, { lastName: 'Moreau', specialty: 'Dermatology' })
    await createProvider(app, await (await newOrganization(app)).user('ADMIN'), { lastName: 'Adams' })
    const billing = await org.user('BILLING')
    const list = async (query: string, user = billing) => {
      const response = await app.inject({ url: `/api/providers?${query}`, headers: bearer(user.token) })
      expect(response.statusCode, query).toBe(200)
      return response.json().data.content.map((p: { id: number }) => p.id)
    }
    expect(await list('')).toEqual([b.id, c.id, a.id])
    expect(await list('sort=lastName,desc')).toEqual([a.id, c.id, b.id])
    expect(await list('specialty=CARDIOLOGY&sort=lastName,asc')).toEqual([b.id, a.id])
    expect(await list('active=false')).toEqual([b.id])
    expect(await list('active=true&specialty=cardiology')).toEqual([a.id])
    expect(await list('', await org.user('FRONT_DESK'))).toHaveLength(3)
    const patient = await org.user('PATIENT')
    expect((await app.inject({ url: '/api/providers', headers: bearer(patient.token) })).statusCode).toBe(403)
  })
})

describe('PUT /api/providers/{id}', () => {
  it('replaces the record, keeping active, slot length and hours when omitted', async () => {
    const admin = await (await newOrganization(app)).user('ADMIN')
    const created = await createProvider(app, admin, { slotMinutes: 20, active: false, title: 'MD' })
    const { weeklyHours: _hours, ...body } = providerBody({ lastName: 'Married', timeZone: 'Europe/Paris' })
    const { slotMinutes: _slot, title: _title, ...replacement } = body
    const response = await app.inject({
      method: 'PUT',
      url: `/api/providers/${created.id}`,
      headers: bearer(admin.token),
      payload: replacement,
    })
    expect(response.statusCode).toBe(200)
    expect(response.json().data).toMatchObject({
      lastName: 'Married',
      timeZone: 'Europe/Paris',
      title: null,
      slotMinutes: 20,
      active: false,
      weeklyHours: everyDay(['09:00', '17:00']),
    })
  })
})

describe('PUT /api/providers/{id}/hours', () => {
  it('replaces the weekly hours; 422 for overlapping ones', async () => {
    const admin = await (await newOrganization(app)).user('ADMIN')
    const provider = await createProvider(app, admin)
    const hours = (weeklyHours: object[]) =>
      app.inject({
        method: 'PUT',
        url: `/api/providers/${provider.id}/hours`,
        headers: bearer(admin.token),
        payload: { weeklyHours },
      })
    const replaced = await hours([
      { dayOfWeek: 'FRIDAY', startTime: '13:00:00', endTime: '18:00:00' },
      { dayOfWeek: 'FRIDAY', startTime: '08:00:00', endTime: '13:00:00' },
    ])
    expect(replaced.statusCode).toBe(200)
    expect(replaced.json().data.weeklyHours).toEqual([
      { dayOfWeek: 'FRIDAY', startTime: '08:00:00', endTime: '13:00:00' },
      { dayOfWeek: 'FRIDAY', startTime: '13:00:00', endTime: '18:00:00' },
    ])
    const overlapping = await hours([
      { dayOfWeek: 'FRIDAY', startTime: '08:00:00', endTime: '13:00:00' },
      { dayOfWeek: 'FRIDAY', startTime: '12:59:00', endTime: '18:00:00' },
    ])
    expect(overlapping.statusCode).toBe(422)
    expect((await hours([])).json().data.weeklyHours).toEqual([])
  })
})

describe('dated exceptions', () => {
  it('adds and removes them; 422 for incomplete times', async () => {
    const admin = await (await newOrganization(app)).user('ADMIN')
    const provider = await createProvider(app, admin)
    const add = (payload: object) =>
      app.inject({
        method: 'POST',
        url: `/api/providers/${provider.id}/exceptions`,
        headers: bearer(admin.token),
        payload,
      })
    const date = daysFromToday(20)
    const created = await add({ date, kind: 'TIME_OFF', reason: 'Holiday' })
    expect(created.statusCode).toBe(201)
    expect(created.json().data).toMatchObject({
      date,
      kind: 'TIME_OFF',
      startTime: null,
      endTime: null,
      reason: 'Holiday',
    })
    for (const [payload, details] of [
      [{ date, kind: 'EXTRA_HOURS' }, 'EXTRA_HOURS needs startTime and endTime'],
      [{ date, kind: 'TIME_OFF', startTime: '10:00:00' }, 'startTime and endTime go together'],
      [
        { date, kind: 'TIME_OFF', startTime: '10:00:00', endTime: '09:00:00' },
        'endTime must be after startTime',
      ],
    ] as const) {
      const response = await add(payload)
      expect(response.statusCode, details).toBe(422)
      expect(response.json().error.details).toContain(details)
    }
    const remove = () =>
      app.inject({
        method: 'DELETE',
        url: `/api/providers/${provider.id}/exceptions/${created.json().data.id}`,
        headers: bearer(admin.token),
      })
    const removed = await remove()
    expect(removed.statusCode).toBe(200)
    expect(removed.json().data).toEqual({ id: created.json().data.id })
    expect((await remove()).statusCode).toBe(404)
  })
})

describe('GET /api/providers/{id}/schedule', () => {
  it('returns each day’s hours, exceptions, booked time without patients, and free slots', async () => {
    const practice = await newPractice(app, { weeklyHours: everyDay(['09:00', '11:00']), slotMinutes: 60 })
    const [first, second] = [daysFromToday(10), daysFromToday(11)]
    const appointment = await booked(app, practice, first, '09:30:00', { duration: 30 })
    const off = await app.inject({
      method: 'POST',
      url: `/api/providers/${practice.provider.id}/exceptions`,
      headers: bearer(practice.admin.token),
      payload: { date: second, kind: 'TIME_OFF', startTime: '10:00:00', endTime: '11:00:00' },
    })
    const response = await app.inject({
      url: `/api/providers/${practice.provider.id}/schedule?startDate=${first}&endDate=${second}`,
      headers: bearer(practice.nurse.token),
    })
    expect(response.statusCode).toBe(200)
    const schedule = response.json().data
    expect(schedule).toMatchObject({ providerId: practice.provider.id, timeZone: 'UTC', slotMinutes: 60 })
    expect(schedule.days).toHaveLength(2)
    expect(schedule.days[0]).toMatchObject({
      date: first,
      workingHours: [{ startTime: '09:00:00', endTime: '11:00:00' }],
      exceptions: [],
      appointments: [
        {
          id: appointment.id,
          status: 'SCHEDULED',
          appointmentType: 'OFFICE_VISIT',
          startTime: '09:30:00',
          endTime: '10:00:00',
          startsAt: `${first}T09:30:00.000Z`,
          endsAt: `${first}T10:00:00.000Z`,
        },
      ],
      freeSlots: [{ startTime: '10:00:00', endTime: '11:00:00' }],
    })
    expect(schedule.days[0].appointments[0]).not.toHaveProperty('patientId')
    expect(schedule.days[1]).toMatchObject({
      date: second,
      workingHours: [{ startTime: '09:00:00', endTime: '10:00:00' }],
      exceptions: [{ id: off.json().data.id, kind: 'TIME_OFF', startTime: '10:00:00', endTime: '11:00:00' }],
      appointments: [],
      freeSlots: [{ startTime: '09:00:00', endTime: '10:00:00' }],
    })
  })

  it('accepts 31 days and returns 400 for 32, for a reversed range and without dates', async () => {
    const practice = await newPractice(app)
    const schedule = (query: string) =>
      app.inject({
        url: `/api/providers/${practice.provider.id}/schedule?${query}`,
        headers: bearer(practice.nurse.token),
      })
    const month = await schedule(`startDate=${daysFromToday(1)}&endDate=${daysFromToday(31)}`)
    expect(month.statusCode).toBe(200)
    expect(month.json().data.days).toHaveLength(31)
    for (const [query, details] of [
      [`startDate=${daysFromToday(1)}&endDate=${daysFromToday(32)}`, 'The range may span at most 31 days'],
      [`startDate=${daysFromToday(2)}&endDate=${daysFromToday(1)}`, 'endDate must not be before startDate'],
      [`startDate=${daysFromToday(1)}`, 'endDate is required'],
    ]) {
      const response = await schedule(query as string)
      expect(response.statusCode, query).toBe(400)
      expect(response.json().error.details).toBe(details)
    }
  })
})

describe('another organization’s provider', () => {
  it('is 403 AUTH_003 on every provider route, a missing one 404, and nothing changes', async () => {
    const owner = await newPractice(app)
    const outsider = await (await newOrganization(app)).user('ADMIN')
    const id = owner.provider.id
    const date = daysFromToday(5)
    const requests = (providerId: number) => [
      app.inject({ url: `/api/providers/${providerId}`, headers: bearer(outsider.token) }),
      app.inject({
        url: `/api/providers/${providerId}/schedule?startDate=${date}&endDate=${date}`,
        headers: bearer(outsider.token),
      }),
      app.inject({
        method: 'PUT',
        url: `/api/providers/${providerId}`,
        headers: bearer(outsider.token),
        payload: providerBody({ weeklyHours: undefined }),
      }),
      app.inject({
        method: 'PUT',
        url: `/api/providers/${providerId}/hours`,
        headers: bearer(outsider.token),
        payload: { weeklyHours: [] },
      }),
      app.inject({
        method: 'POST',
        url: `/api/providers/${providerId}/exceptions`,
        headers: bearer(outsider.token),
        payload: { date, kind: 'TIME_OFF' },
      }),
      app.inject({
        method: 'DELETE',
        url: `/api/providers/${providerId}/exceptions/1`,
        headers: bearer(outsider.token),
      }),
    ]
    for (const response of await Promise.all(requests(id))) {
      expect(response.statusCode, response.body).toBe(403)
      expect(response.json().error).toEqual({
        code: 'AUTH_003',
        details: 'The provider belongs to another organization',
      })
    }
    for (const response of await Promise.all(requests(2_000_000_000))) expect(response.statusCode).toBe(404)
    const reread = await app.inject({ url: `/api/providers/${id}`, headers: bearer(owner.admin.token) })
    expect(reread.json().data.weeklyHours).toHaveLength(7)
    const list = await app.inject({ url: '/api/providers', headers: bearer(outsider.token) })
    expect(list.json().data.totalElements).toBe(0)
  })
})
