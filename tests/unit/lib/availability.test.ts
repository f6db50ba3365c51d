import { describe, expect, it } from 'vitest'
import type { ProviderExceptionRow } from '../../../db/tables/provider-exceptions.js'
import type { ProviderHoursRow } from '../../../db/tables/provider-hours.js'
import {
  daySlots,
  joinIntervals,
  withinWorkingHours,
  workingIntervals,
} from '../../../src/scheduling/availability.js'
import { minutesOf } from '../../../src/scheduling/zoned-time.js'

// 2030-01-07 is a Monday.
const MONDAY = '2030-01-07'
const hours = (weekday: number, start: string, end: string): ProviderHoursRow => ({
  id: 0,
  organization_id: 1,
  provider_id: 1,
  weekday,
  start_time: `${start}:00`,
  end_time: `${end}:00`,
})
const exception = (date: string, kind: string, start?: string, end?: string): ProviderExceptionRow => ({
  id: 0,
  organization_id: 1,
  provider_id: 1,
  date,
  kind,
  start_time: start ? `${start}:00` : null,
  end_time: end ? `${end}:00` : null,
  reason: null,
  created_by: null,
  created_at: new Date(),
})
const interval = (start: string, end: string) => ({
  start: minutesOf(`${start}:00`),
  end: minutesOf(`${end}:00`),
})
const utc = (date: string, time: string) => Date.parse(`${date}T${time}:00Z`)
const times = (slots: { start: number; end: number }[]) =>
  slots.map(
    (slot) =>
      `${new Date(slot.start).toISOString().slice(11, 16)}-${new Date(slot.end).toISOString().slice(11, 16)}`,
  )

describe('workingIntervals', () => {
  const week = [hours(1, '09:00', '12:00'), hours(1, '13:00', '17:00'), hours(2, '08:00', '10:00')]

  it('takes the intervals of the weekday, lunch break included', () => {
    expect(workingIntervals(MONDAY, week, [])).toEqual([
      interval('09:00', '12:00'),
      interval('13:00', '17:00'),
    ])
    expect(workingIntervals('2030-01-08', week, [])).toEqual([interval('08:00', '10:00')])
    expect(workingIntervals('2030-01-09', week, [])).toEqual([])
  })

  it('adds extra hours, joining adjacent ones, and removes time off, whole-day time off winning', () => {
    expect(workingIntervals(MONDAY, week, [exception(MONDAY, 'EXTRA_HOURS', '12:00', '13:00')])).toEqual([
      interval('09:00', '17:00'),
    ])
    expect(workingIntervals(MONDAY, week, [exception(MONDAY, 'TIME_OFF', '10:00', '14:00')])).toEqual([
      interval('09:00', '10:00'),
      interval('14:00', '17:00'),
    ])
    expect(
      workingIntervals(MONDAY, week, [
        exception(MONDAY, 'EXTRA_HOURS', '18:00', '20:00'),
        exception(MONDAY, 'TIME_OFF'),
      ]),
    ).toEqual([])
    expect(
      workingIntervals('2030-01-09', week, [exception('2030-01-09', 'EXTRA_HOURS', '10:00', '11:00')]),
    ).toEqual([interval('10:00', '11:00')])
  })

  it('ignores exceptions of other dates', () => {
    expect(workingIntervals(MONDAY, week, [exception('2030-01-14', 'TIME_OFF')])).toHaveLength(2)
  })
})

describe('joinIntervals', () => {
  it('sorts and joins overlapping and touching intervals', () => {
    expect(
      joinIntervals([
        interval('13:00', '14:00'),
        interval('09:00', '10:00'),
        interval('10:00', '11:00'),
        interval('09:30', '09:45'),
      ]),
    ).toEqual([interval('09:00', '11:00'), interval('13:00', '14:00')])
  })
})

describe('daySlots', () => {
  const base = { timeZone: 'UTC', date: MONDAY, stepMinutes: 30, durationMinutes: 30, busy: [], now: 0 }

  it('fills each interval, the last slot ending exactly at closing time, none across the lunch break', () => {
    const slots = daySlots({ ...base, intervals: [interval('09:00', '10:30'), interval('13:00', '14:00')] })
    expect(times(slots)).toEqual(['09:00-09:30', '09:30-10:00', '10:00-10:30', '13:00-13:30', '13:30-14:00'])
  })

  it('keeps longer slots on the grid and inside the interval', () => {
    const slots = daySlots({ ...base, durationMinutes: 60, intervals: [interval('09:00', '11:00')] })
    expect(times(slots)).toEqual(['09:00-10:00', '09:30-10:30', '10:00-11:00'])
    expect(daySlots({ ...base, durationMinutes: 60, intervals: [interval('09:00', '09:45')] })).toEqual([])
  })

  it('marks slots overlapping busy time unavailable, but not ones merely touching it', () => {
    const slots = daySlots({
      ...base,
      intervals: [interval('09:00', '11:00')],
      busy: [{ start: utc(MONDAY, '09:30'), end: utc(MONDAY, '10:15') }],
    })
    expect(slots.map((slot) => slot.available)).toEqual([true, false, false, true])
  })

  it('marks slots that have started unavailable', () => {
    const slots = daySlots({ ...base, intervals: [interval('09:00', '10:30')], now: utc(MONDAY, '09:30') })
    expect(slots.map((slot) => slot.available)).toEqual([false, false, true])
  })

  it('on the spring change day skips the start the clocks skip and keeps real durations', () => {
    const slots = daySlots({
      ...base,
      timeZone: 'America/New_York',
      date: '2030-03-10',
      stepMinutes: 60,
      durationMinutes: 60,
      intervals: [interval('00:00', '05:00')],
    })
    // 00:00 EST, 01:00 EST (ends 03:00 EDT), [02:00 does not exist], 03:00 EDT, 04:00 EDT.
    expect(times(slots)).toEqual(['05:00-06:00', '06:00-07:00', '07:00-08:00', '08:00-09:00'])
  })

  it('on the autumn change day starts a repeated time once, at its earlier instant', () => {
    const slots = daySlots({
      ...base,
      timeZone: 'America/New_York',
      date: '2030-11-03',
      stepMinutes: 60,
      durationMinutes: 60,
      intervals: [interval('00:00', '03:00')],
    })
    // 00:00 EDT, 01:00 EDT, 02:00 EST: the hour 01:00–02:00 EST gets no slot.
    expect(times(slots)).toEqual(['04:00-05:00', '05:00-06:00', '07:00-08:00'])
  })
})

describe('withinWorkingHours', () => {
  const intervals = [interval('09:00', '12:00'), interval('13:00', '17:00')]
  const span = (start: string, end: string) => ({ start: utc(MONDAY, start), end: utc(MONDAY, end) })

  it('accepts a span inside one interval, up to its very end', () => {
    expect(withinWorkingHours('UTC', MONDAY, intervals, span('16:30', '17:00'))).toBe(true)
    expect(withinWorkingHours('UTC', MONDAY, intervals, span('09:00', '09:10'))).toBe(true)
  })

  it('rejects a span leaving its interval, even into the next one', () => {
    expect(withinWorkingHours('UTC', MONDAY, intervals, span('16:45', '17:15'))).toBe(false)
    expect(withinWorkingHours('UTC', MONDAY, intervals, span('11:30', '13:30'))).toBe(false)
    expect(withinWorkingHours('UTC', MONDAY, intervals, span('08:55', '09:30'))).toBe(false)
  })
})
