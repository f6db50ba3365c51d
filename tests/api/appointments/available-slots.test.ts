import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { buildTestApp } from '../../helpers/app.js'
import { bearer, daysFromToday, everyDay, newOrganization, nthSunday } from '../../helpers/factories.js'
import { booked, newPractice, type Practice } from '../../helpers/scheduling.js'

let app: App

beforeAll(async () => {
  app = await buildTestApp()
})
afterAll(async () => {
  await app.close()
})

const DAY = daysFromToday(10)
const NEXT_YEAR = new Date().getUTCFullYear() + 1

interface Slot {
  startTime: string
  endTime: string
  startsAt: string
  endsAt: string
  available: boolean
}

async function slots(practice: Practice, date: string, extra = ''): Promise<Slot[]> {
  const response = await app.inject({
    url: `/api/appointments/available-slots?providerId=${practice.provider.id}&date=${date}${extra}`,
    headers: bearer(practice.nurse.token),
  })
  expect(response.statusCode, response.body).toBe(200)
  return response.json().data
}

const summary = (list: Slot[]) =>
  list.map((s) => `${s.startTime.slice(0, 5)}-${s.endTime.slice(0, 5)}${s.available ? '' : ' taken'}`)

function addException(practice: Practice, payload: object) {
  return app.inject({
    method: 'POST',
    url: `/api/providers/${practice.provider.id}/exceptions`,
    headers: bearer(practice.admin.token),
    payload,
  })
}

describe('GET /api/appointments/available-slots', () => {
  it('lists the slot grid of the day, the last slot ending exactly at closing time', async () => {
    const practice = await newPractice(app, { weeklyHours: everyDay(['09:00', '11:00']) })
    const list = await slots(practice, DAY)
    expect(summary(list)).toEqual(['09:00-09:30', '09:30-10:00', '10:00-10:30', '10:30-11:00'])
    expect(list[3]).toEqual({
      startTime: '10:30:00',
      endTime: '11:00:00',
      startsAt: `${DAY}T10:30:00.000Z`,
      endsAt: `${DAY}T11:00:00.000Z`,
      available: true,
    })
  })

  it('leaves out the lunch break, and longer slots stop before it', async () => {
    const practice = await newPractice(app, { weeklyHours: everyDay(['09:00', '10:30'], ['11:30', '12:30']) })
    expect(summary(await slots(practice, DAY))).toEqual([
      '09:00-09:30',
      '09:30-10:00',
      '10:00-10:30',
      '11:30-12:00',
      '12:00-12:30',
    ])
    expect(summary(await slots(practice, DAY, '&duration=60'))).toEqual([
      '09:00-10:00',
      '09:30-10:30',
      '11:30-12:30',
    ])
  })

  it('marks booked time taken and gives a cancelled appointment’s time back', async () => {
    const practice = await newPractice(app, { weeklyHours: everyDay(['09:00', '11:00']) })
    await booked(app, practice, DAY, '09:15:00')
    const cancelled = await booked(app, practice, DAY, '10:30:00')
    await app.inject({
      method: 'POST',
      url: `/api/appointments/${cancelled.id}/cancel`,
      headers: bearer(practice.nurse.token),
    })
    expect(summary(await slots(practice, DAY))).toEqual([
      '09:00-09:30 taken',
      '09:30-10:00 taken',
      '10:00-10:30',
      '10:30-11:00',
    ])
  })

  it('follows time off and extra hours of the date only', async () => {
    const practice = await newPractice(app, { weeklyHours: everyDay(['09:00', '11:00']) })
    const nextDay = daysFromToday(11)
    const later = daysFromToday(12)
    expect(
      (
        await addException(practice, {
          date: DAY,
          kind: 'TIME_OFF',
          startTime: '09:30:00',
          endTime: '10:30:00',
        })
      ).statusCode,
    ).toBe(201)
    expect(
      (await addException(practice, { date: nextDay, kind: 'TIME_OFF', reason: 'Conference' })).statusCode,
    ).toBe(201)
    expect(
      (
        await addException(practice, {
          date: later,
          kind: 'EXTRA_HOURS',
          startTime: '11:00:00',
          endTime: '12:00:00',
        })
      ).statusCode,
    ).toBe(201)
    expect(summary(await slots(practice, DAY))).toEqual(['09:00-09:30', '10:30-11:00'])
    expect(await slots(practice, nextDay)).toEqual([])
    expect(summary(await slots(practice, later))).toHaveLength(6)
  })

  it('on the spring change day has no slot at a time the clocks skip', async () => {
    const spring = nthSunday(NEXT_YEAR, 3, 2)
    const practice = await newPractice(app, {
      timeZone: 'America/New_York',
      slotMinutes: 60,
      weeklyHours: everyDay(['00:00', '05:00'], ['09:00', '10:00']),
    })
    const list = await slots(practice, spring)
    expect(list.map((s) => [s.startTime, s.endTime, s.startsAt])).toEqual([
      ['00:00:00', '01:00:00', `${spring}T05:00:00.000Z`],
      ['01:00:00', '03:00:00', `${spring}T06:00:00.000Z`],
      ['03:00:00', '04:00:00', `${spring}T07:00:00.000Z`],
      ['04:00:00', '05:00:00', `${spring}T08:00:00.000Z`],
      ['09:00:00', '10:00:00', `${spring}T13:00:00.000Z`],
    ])
    const before = await slots(practice, daysBefore(spring))
    expect(before.at(-1)?.startsAt).toBe(`${daysBefore(spring)}T14:00:00.000Z`)
  })

  it('on the autumn change day starts the repeated hour once, at its first occurrence', async () => {
    const fall = nthSunday(NEXT_YEAR, 11, 1)
    const practice = await newPractice(app, {
      timeZone: 'America/New_York',
      slotMinutes: 60,
      weeklyHours: everyDay(['00:00', '03:00']),
    })
    const list = await slots(practice, fall)
    expect(list.map((s) => [s.startTime, s.endTime, s.startsAt, s.endsAt])).toEqual([
      ['00:00:00', '01:00:00', `${fall}T04:00:00.000Z`, `${fall}T05:00:00.000Z`],
      ['01:00:00', '01:00:00', `${fall}T05:00:00.000Z`, `${fall}T06:00:00.000Z`],
      ['02:00:00', '03:00:00', `${fall}T07:00:00.000Z`, `${fall}T08:00:00.000Z`],
    ])
    await booked(app, practice, fall, '01:00:00')
    expect(summary(await slots(practice, fall))).toEqual(['00:00-01:00', '01:00-01:00 taken', '02:00-03:00'])
  })

  it('marks today’s slots that have started unavailable', async () => {
    const practice = await newPractice(app, { weeklyHours: everyDay(['00:00', '24:00']), slotMinutes: 60 })
    const today = daysFromToday(0)
    const before = Date.now()
    const list = await slots(practice, today)
    const after = Date.now()
    expect(list).toHaveLength(24)
    expect(list.at(-1)?.endTime).toBe('24:00:00')
    for (const slot of list) {
      const start = Date.parse(slot.startsAt)
      if (start <= before) expect(slot.available, slot.startTime).toBe(false)
      if (start > after) expect(slot.available, slot.startTime).toBe(true)
    }
  })

  it('has no slots for an inactive provider', async () => {
    const practice = await newPractice(app, { active: false })
    expect(await slots(practice, DAY)).toEqual([])
  })

  it('returns 403 for another organization’s provider, 404 for a missing one, 400 for bad parameters', async () => {
    const practice = await newPractice(app)
    const outsider = await (await newOrganization(app)).user('NURSE')
    const cases: [string, number][] = [
      [`providerId=${practice.provider.id}&date=${DAY}`, 403],
      [`providerId=2000000000&date=${DAY}`, 404],
      [`providerId=${practice.provider.id}`, 400],
      [`providerId=${practice.provider.id}&date=${DAY}&duration=5`, 400],
      [`providerId=${practice.provider.id}&date=2031-13-01`, 400],
    ]
    for (const [query, status] of cases) {
      const response = await app.inject({
        url: `/api/appointments/available-slots?${query}`,
        headers: bearer(outsider.token),
      })
      expect(response.statusCode, query).toBe(status)
    }
  })
})

function daysBefore(date: string): string {
  return new Date(Date.parse(`${date}T00:00:00Z`) - 86_400_000).toISOString().slice(0, 10)
}
