import pg from 'pg'
import { describe, expect, it } from 'vitest'
import { parseTimestamptz } from '../../db/utc-timestamp.js'

// pg's own parser for timestamptz, the reference the fast path must agree with.
const reference = pg.types.getTypeParser(1184) as (text: string) => Date | number | null
const asComparable = (value: Date | number | null) => (value instanceof Date ? value.getTime() : value)

describe('parseTimestamptz', () => {
  it.each([
    '2026-11-24 20:16:22+00',
    '2026-11-24 20:16:22.2+00',
    '2026-11-24 20:16:22.25+00',
    '2026-11-24 20:16:22.253+00',
    '2026-11-24 20:16:22.253789+00',
    '2026-11-24 20:16:22.999999+00',
    '1999-12-31 23:59:59.000001+00',
    '2024-02-29 00:00:00+00',
    '1000-01-01 00:00:00+00',
  ])('reads %s as pg does', (text) => {
    expect(asComparable(parseTimestamptz(text))).toBe(asComparable(reference(text)))
    expect(parseTimestamptz(text)).toBeInstanceOf(Date)
  })

  it.each([
    '2026-11-24 21:16:22.253+01',
    '2026-11-24 15:46:22.253-04:30',
    '0099-03-01 10:00:00+00',
    '0044-03-15 12:00:00+00 BC',
    'infinity',
    '-infinity',
  ])('leaves %s to pg’s parser, with the same result', (text) => {
    expect(asComparable(parseTimestamptz(text))).toBe(asComparable(reference(text)))
  })

  it('agrees with pg on two thousand instants over three years, with six-digit fractions', () => {
    const start = Date.UTC(2026, 0, 1)
    for (let step = 0; step < 2000; step += 1) {
      const time = new Date(start + step * 43_219_007)
      const text = `${time.toISOString().replace('T', ' ').replace('Z', '')}${String(step % 1000).padStart(3, '0')}+00`
      expect(parseTimestamptz(text)?.valueOf()).toBe(reference(text)?.valueOf())
    }
  })
})
