import type { ProviderExceptionRow } from '../../db/tables/provider-exceptions.js'
import type { ProviderHoursRow } from '../../db/tables/provider-hours.js'
import { isoWeekday, minutesOf, zonedInstant } from './zoned-time.js'

/** Wall-clock minutes after midnight, end exclusive (1440 = end of the day). */
export interface Interval {
  start: number
  end: number
}

/** Instants in epoch milliseconds, end exclusive. */
export interface Span {
  start: number
  end: number
}

export interface Slot extends Span {
  available: boolean
}

const MINUTE_MS = 60_000
const WHOLE_DAY: Interval = { start: 0, end: 1440 }

const toInterval = (row: { start_time: string | null; end_time: string | null }): Interval =>
  row.start_time === null || row.end_time === null
    ? WHOLE_DAY
    : { start: minutesOf(row.start_time), end: minutesOf(row.end_time) }

/** Sorted, with overlapping and adjacent intervals joined. */
export function joinIntervals(intervals: Interval[]): Interval[] {
  const joined: Interval[] = []
  for (const next of [...intervals].sort((a, b) => a.start - b.start)) {
    const last = joined[joined.length - 1]
    if (last && next.start <= last.end) last.end = Math.max(last.end, next.end)
    else joined.push({ ...next })
  }
  return joined
}

function subtract(intervals: Interval[], removed: Interval[]): Interval[] {
  return removed.reduce<Interval[]>(
    (remaining, cut) =>
      remaining.flatMap((interval) =>
        [
          { start: interval.start, end: Math.min(interval.end, cut.start) },
          { start: Math.max(interval.start, cut.end), end: interval.end },
        ].filter((part) => part.end > part.start),
      ),
    intervals,
  )
}

/** A provider's working wall-clock intervals on a date: weekly hours plus extra hours, minus time off. */
export function workingIntervals(
  date: string,
  hours: readonly ProviderHoursRow[],
  exceptions: readonly ProviderExceptionRow[],
): Interval[] {
  const weekday = isoWeekday(date)
  const onDate = exceptions.filter((exception) => exception.date === date)
  const worked = [
    ...hours.filter((row) => row.weekday === weekday),
    ...onDate.filter((exception) => exception.kind === 'EXTRA_HOURS'),
  ].map(toInterval)
  const off = onDate.filter((exception) => exception.kind === 'TIME_OFF').map(toInterval)
  return subtract(joinIntervals(worked), off)
}

/** An interval's instants; an end the clocks skip is where they resume (the zone rule's shift). */
const spanOf = (timeZone: string, date: string, interval: Interval): Span => ({
  start: zonedInstant(timeZone, date, interval.start).instant,
  end: zonedInstant(timeZone, date, interval.end).instant,
})

/** Whether the span lies inside one of the working intervals of the date. */
export function withinWorkingHours(
  timeZone: string,
  date: string,
  intervals: readonly Interval[],
  span: Span,
): boolean {
  return intervals.some((interval) => {
    const working = spanOf(timeZone, date, interval)
    return working.start <= span.start && span.end <= working.end
  })
}

export interface SlotGrid {
  timeZone: string
  date: string
  intervals: readonly Interval[]
  stepMinutes: number
  durationMinutes: number
  /** Time already taken by appointments. */
  busy: readonly Span[]
  now: number
}

/**
 * The slots of a day on the wall-clock grid: from the start of each working interval, one every
 * `stepMinutes`, each lasting `durationMinutes` of real time and ending within its interval.
 * On a DST change day a start the clocks skip has no slot, and an ambiguous start is its earlier
 * instant: the same rules a booking follows, so every listed slot can be booked by its date and
 * time. A slot is unavailable when it has started or overlaps busy time.
 */
export function daySlots(grid: SlotGrid): Slot[] {
  const slots: Slot[] = []
  for (const interval of grid.intervals) {
    const working = spanOf(grid.timeZone, grid.date, interval)
    for (let minute = interval.start; minute < interval.end; minute += grid.stepMinutes) {
      const start = zonedInstant(grid.timeZone, grid.date, minute)
      const end = start.instant + grid.durationMinutes * MINUTE_MS
      if (start.inGap || end > working.end) continue
      const taken = grid.busy.some((span) => span.start < end && start.instant < span.end)
      slots.push({ start: start.instant, end, available: start.instant > grid.now && !taken })
    }
  }
  return slots
}
