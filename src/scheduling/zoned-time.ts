/**
 * Wall-clock dates and times in IANA time zones, on top of Intl (the runtime's ICU time zone
 * database): small enough that a date library is not needed. Times of day are minutes after
 * midnight (0–1440, where 1440 is the end of the day); instants are epoch milliseconds.
 */

const MINUTE_MS = 60_000
const DAY_MS = 86_400_000

const formatters = new Map<string, Intl.DateTimeFormat>()

function formatter(zone: string): Intl.DateTimeFormat {
  let cached = formatters.get(zone)
  if (!cached) {
    cached = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    })
    formatters.set(zone, cached)
  }
  return cached
}

/** The zone's canonical name (`US/Eastern` → `America/New_York`), or undefined for an unknown zone. */
export function canonicalTimeZone(zone: string): string | undefined {
  // Newer runtimes also accept UTC offsets ('+01:00') as zones; only IANA names are zones here.
  if (/^[+-]/.test(zone)) return undefined
  try {
    return new Intl.DateTimeFormat('en-US', { timeZone: zone }).resolvedOptions().timeZone
  } catch {
    return undefined
  }
}

/** The reading of a clock in the zone at an instant, as the epoch milliseconds of a UTC clock showing it. */
function wallClock(zone: string, instant: number): number {
  const parts = formatter(zone).formatToParts(new Date(instant))
  const field = (type: Intl.DateTimeFormatPartTypes) => Number(parts.find((p) => p.type === type)?.value)
  return Date.UTC(
    field('year'),
    field('month') - 1,
    field('day'),
    field('hour'),
    field('minute'),
    field('second'),
  )
}

const offsetAt = (zone: string, instant: number) => wallClock(zone, instant) - instant

/** An instant for a wall-clock reading; `inGap` when the clocks skipped that reading. */
export interface ZonedInstant {
  instant: number
  inGap: boolean
}

/**
 * The instant at which clocks in the zone read `date` at `minutes` after midnight.
 * - Ambiguous reading (clocks set back, the reading happens twice): the earlier instant.
 * - Reading in a gap (clocks set forward, it never happens): `inGap`, and the instant the offset
 *   before the change gives, i.e. the reading shifted forward by the gap (PostgreSQL's and
 *   Temporal's "compatible" rule). Callers that take a time from a client reject gaps instead.
 */
export function zonedInstant(zone: string, date: string, minutes: number): ZonedInstant {
  const wall = Date.parse(`${date}T00:00:00Z`) + minutes * MINUTE_MS
  // Real zones change offset at most once within a day either side of any instant; with the same
  // offset on both sides no change is near, and the reading is unambiguous.
  const before = offsetAt(zone, wall - DAY_MS)
  const after = offsetAt(zone, wall + DAY_MS)
  if (before === after) return { instant: wall - before, inGap: false }
  const matches = [wall - before, wall - after]
    .filter((instant) => wallClock(zone, instant) === wall)
    .sort((a, b) => a - b)
  const earliest = matches[0]
  if (earliest !== undefined) return { instant: earliest, inGap: false }
  return { instant: wall - before, inGap: true }
}

/** The zone's wall-clock date and minutes after midnight at an instant. */
export function zonedDateTime(zone: string, instant: number): { date: string; minutes: number } {
  const wall = wallClock(zone, instant)
  return {
    date: new Date(wall).toISOString().slice(0, 10),
    minutes: Math.floor((wall % DAY_MS) / MINUTE_MS),
  }
}

/** `HH:MM:SS` (whole minutes; `24:00:00` is the end of the day) → minutes after midnight. */
export function minutesOf(time: string): number {
  const [hours = 0, minutes = 0] = time.split(':').map(Number)
  return hours * 60 + minutes
}

/** Minutes after midnight → `HH:MM:SS`. */
export function timeOf(minutes: number): string {
  const pad = (n: number) => String(n).padStart(2, '0')
  return `${pad(Math.floor(minutes / 60))}:${pad(minutes % 60)}:00`
}

/** The wall-clock time of an instant as seen from a day: `24:00:00` when it is the next midnight. */
export function timeOnDay(zone: string, date: string, instant: number): string {
  const local = zonedDateTime(zone, instant)
  return timeOf(local.date > date && local.minutes === 0 ? 1440 : local.minutes)
}

export function addDays(date: string, days: number): string {
  return new Date(Date.parse(`${date}T00:00:00Z`) + days * DAY_MS).toISOString().slice(0, 10)
}

/** Whole days from `from` to `to` (negative when `to` is earlier). */
export function daysBetween(from: string, to: string): number {
  return Math.round((Date.parse(`${to}T00:00:00Z`) - Date.parse(`${from}T00:00:00Z`)) / DAY_MS)
}

/** ISO weekday of a calendar date: 1 = Monday … 7 = Sunday. */
export function isoWeekday(date: string): number {
  return new Date(`${date}T00:00:00Z`).getUTCDay() || 7
}
