import type { Db } from '../../../db/database.js'
import type { AppointmentRow } from '../../../db/tables/appointments.js'
import type { ProviderRow } from '../../../db/tables/providers.js'
import type { AvailableSlot, AvailableSlotsQuery } from '../../../schemas/appointments.js'
import {
  type ProviderSchedule,
  SCHEDULE_MAX_DAYS,
  type ScheduleDay,
  type ScheduleQuery,
} from '../../../schemas/providers.js'
import type { Actor } from '../../access/organization-scope.js'
import { AppError } from '../../errors.js'
import { daySlots, type Slot, type Span } from '../../scheduling/availability.js'
import {
  addDays,
  daysBetween,
  isoWeekday,
  timeOf,
  timeOnDay,
  zonedDateTime,
  zonedInstant,
} from '../../scheduling/zoned-time.js'
import { dayOfWeek, requireProvider, workingCalendar, workingIntervalsOn } from '../providers/service.js'
import { findBookedAppointments } from './queries.js'

/** Appointments holding the provider's time from the start of `from` to the end of `to`. */
function bookedBetween(db: Db, provider: ProviderRow, from: string, to: string) {
  const start = zonedInstant(provider.time_zone, from, 0).instant
  const end = zonedInstant(provider.time_zone, addDays(to, 1), 0).instant
  return findBookedAppointments(db, provider.organization_id, provider.id, new Date(start), new Date(end))
}

const spanOf = (row: AppointmentRow): Span => ({ start: row.starts_at.getTime(), end: row.ends_at.getTime() })

const timesOf = (timeZone: string, date: string, span: Span) => ({
  startTime: timeOf(zonedDateTime(timeZone, span.start).minutes),
  endTime: timeOnDay(timeZone, date, span.end),
  startsAt: new Date(span.start).toISOString(),
  endsAt: new Date(span.end).toISOString(),
})

const toAvailableSlot = (timeZone: string, date: string, slot: Slot): AvailableSlot => ({
  ...timesOf(timeZone, date, slot),
  available: slot.available,
})

function checkRange({ startDate, endDate }: ScheduleQuery): void {
  const days = daysBetween(startDate, endDate) + 1
  if (days < 1) throw new AppError('VAL_001', 'endDate must not be before startDate', { status: 400 })
  if (days > SCHEDULE_MAX_DAYS) {
    throw new AppError('VAL_001', `The range may span at most ${SCHEDULE_MAX_DAYS} days`, { status: 400 })
  }
}

export async function providerSchedule(
  db: Db,
  actor: Actor,
  id: number,
  query: ScheduleQuery,
): Promise<ProviderSchedule> {
  checkRange(query)
  const provider = await requireProvider(db, actor, id)
  const zone = provider.time_zone
  const calendar = await workingCalendar(db, provider, query.startDate, query.endDate)
  const booked = await bookedBetween(db, provider, query.startDate, query.endDate)
  const busy = booked.map(spanOf)
  const now = Date.now()
  const days: ScheduleDay[] = []
  for (let date = query.startDate; date <= query.endDate; date = addDays(date, 1)) {
    const intervals = calendar.intervalsOn(date)
    const slots = daySlots({
      timeZone: zone,
      date,
      intervals,
      stepMinutes: provider.slot_minutes,
      durationMinutes: provider.slot_minutes,
      busy,
      now,
    })
    days.push({
      date,
      dayOfWeek: dayOfWeek(isoWeekday(date)),
      workingHours: intervals.map((interval) => ({
        startTime: timeOf(interval.start),
        endTime: timeOf(interval.end),
      })),
      exceptions: calendar.exceptionsOn(date),
      appointments: booked
        .filter((row) => zonedDateTime(zone, row.starts_at.getTime()).date === date)
        .map((row) => ({
          id: row.id,
          status: row.status,
          appointmentType: row.appointment_type,
          ...timesOf(zone, date, spanOf(row)),
        })),
      freeSlots: slots.filter((slot) => slot.available).map((slot) => timesOf(zone, date, slot)),
    })
  }
  return { providerId: provider.id, timeZone: zone, slotMinutes: provider.slot_minutes, days }
}

export async function availableSlots(
  db: Db,
  actor: Actor,
  query: AvailableSlotsQuery,
): Promise<AvailableSlot[]> {
  const provider = await requireProvider(db, actor, query.providerId)
  const booked = await bookedBetween(db, provider, query.date, query.date)
  const slots = daySlots({
    timeZone: provider.time_zone,
    date: query.date,
    intervals: await workingIntervalsOn(db, provider, query.date),
    stepMinutes: provider.slot_minutes,
    durationMinutes: query.duration ?? provider.slot_minutes,
    busy: booked.map(spanOf),
    now: Date.now(),
  })
  return slots.map((slot) => toAvailableSlot(provider.time_zone, query.date, slot))
}
