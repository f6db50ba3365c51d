import { describe, expect, it } from 'vitest'
import {
  addDays,
  canonicalTimeZone,
  daysBetween,
  isoWeekday,
  minutesOf,
  timeOf,
  timeOnDay,
  zonedDateTime,
  zonedInstant,
} from '../../../src/scheduling/zoned-time.js'

const iso = (instant: number) => new Date(instant).toISOString()
const at = (zone: string, date: string, time: string) => {
  const { instant, inGap } = zonedInstant(zone, date, minutesOf(time))
  return { at: iso(instant), inGap }
}

describe('zonedInstant', () => {
  it('converts ordinary wall-clock times with the offset in force', () => {
    expect(at('America/New_York', '2030-01-15', '09:00:00')).toEqual({
      at: '2030-01-15T14:00:00.000Z',
      inGap: false,
    })
    expect(at('America/New_York', '2030-07-15', '09:00:00')).toEqual({
      at: '2030-07-15T13:00:00.000Z',
      inGap: false,
    })
    expect(at('Asia/Kolkata', '2030-07-15', '09:00:00')).toEqual({
      at: '2030-07-15T03:30:00.000Z',
      inGap: false,
    })
    expect(at('UTC', '2030-07-15', '24:00:00')).toEqual({ at: '2030-07-16T00:00:00.000Z', inGap: false })
  })

  it('flags a time the clocks skip and shifts it forward by the gap', () => {
    expect(at('America/New_York', '2030-03-10', '02:00:00')).toEqual({
      at: '2030-03-10T07:00:00.000Z',
      inGap: true,
    })
    expect(at('America/New_York', '2030-03-10', '02:59:00')).toEqual({
      at: '2030-03-10T07:59:00.000Z',
      inGap: true,
    })
    expect(at('America/New_York', '2030-03-10', '03:00:00')).toEqual({
      at: '2030-03-10T07:00:00.000Z',
      inGap: false,
    })
    expect(at('Europe/Berlin', '2030-03-31', '02:30:00')).toEqual({
      at: '2030-03-31T01:30:00.000Z',
      inGap: true,
    })
    // Lord Howe Island moves its clocks by half an hour.
    expect(at('Australia/Lord_Howe', '2030-10-06', '02:15:00').inGap).toBe(true)
    expect(at('Australia/Lord_Howe', '2030-10-06', '02:30:00').inGap).toBe(false)
  })

  it('takes the earlier instant for a time that occurs twice', () => {
    expect(at('America/New_York', '2030-11-03', '01:30:00')).toEqual({
      at: '2030-11-03T05:30:00.000Z',
      inGap: false,
    })
    expect(at('America/New_York', '2030-11-03', '02:00:00')).toEqual({
      at: '2030-11-03T07:00:00.000Z',
      inGap: false,
    })
    expect(at('Europe/Berlin', '2030-10-27', '02:30:00')).toEqual({
      at: '2030-10-27T00:30:00.000Z',
      inGap: false,
    })
  })

  it('treats a whole skipped day as a gap (Samoa, 2011-12-30)', () => {
    expect(at('Pacific/Apia', '2011-12-30', '10:00:00').inGap).toBe(true)
  })
})

describe('zonedDateTime and timeOnDay', () => {
  it('reads the wall clock at an instant, both times of a repeated hour alike', () => {
    expect(zonedDateTime('America/New_York', Date.parse('2030-11-03T05:30:00Z'))).toEqual({
      date: '2030-11-03',
      minutes: 90,
    })
    expect(zonedDateTime('America/New_York', Date.parse('2030-11-03T06:30:00Z'))).toEqual({
      date: '2030-11-03',
      minutes: 90,
    })
    expect(zonedDateTime('Asia/Tokyo', Date.parse('2030-06-30T20:00:00Z'))).toEqual({
      date: '2030-07-01',
      minutes: 300,
    })
  })

  it('writes the next midnight as 24:00:00 of the day', () => {
    expect(timeOnDay('UTC', '2030-06-01', Date.parse('2030-06-02T00:00:00Z'))).toBe('24:00:00')
    expect(timeOnDay('UTC', '2030-06-01', Date.parse('2030-06-01T17:30:00Z'))).toBe('17:30:00')
  })
})

describe('canonicalTimeZone', () => {
  it('returns the canonical name of a known zone and undefined otherwise', () => {
    expect(canonicalTimeZone('America/New_York')).toBe('America/New_York')
    expect(canonicalTimeZone('US/Eastern')).toBe('America/New_York')
    expect(canonicalTimeZone('utc')).toBe('UTC')
    expect(canonicalTimeZone('Mars/Olympus_Mons')).toBeUndefined()
    expect(canonicalTimeZone('+01:00')).toBeUndefined()
  })
})

describe('calendar helpers', () => {
  it('add days, count days, and name ISO weekdays across month and year ends', () => {
    expect(addDays('2030-12-31', 1)).toBe('2031-01-01')
    expect(addDays('2032-02-28', 1)).toBe('2032-02-29')
    expect(daysBetween('2030-01-01', '2030-01-31')).toBe(30)
    expect(daysBetween('2030-01-02', '2030-01-01')).toBe(-1)
    expect(isoWeekday('2030-01-07')).toBe(1)
    expect(isoWeekday('2030-01-13')).toBe(7)
    expect(timeOf(0)).toBe('00:00:00')
    expect(timeOf(1440)).toBe('24:00:00')
    expect(minutesOf('13:45:00')).toBe(825)
  })
})
