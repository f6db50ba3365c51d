import type { ProviderExceptionRow } from '../../../db/tables/provider-exceptions.js'
import type { NewProviderHoursRow, ProviderHoursRow } from '../../../db/tables/provider-hours.js'
import type { ProviderRow } from '../../../db/tables/providers.js'
import {
  type CreateProviderBody,
  DAYS_OF_WEEK,
  type DayOfWeek,
  type Provider,
  type ScheduleException,
  type WorkingInterval,
} from '../../../schemas/providers.js'

/** ISO weekday number (1 = Monday) of a day name, and back. */
export const weekdayOf = (day: DayOfWeek) => DAYS_OF_WEEK.indexOf(day) + 1
export const dayOfWeek = (weekday: number) => DAYS_OF_WEEK[weekday - 1] as DayOfWeek

export function toWorkingInterval(row: ProviderHoursRow): WorkingInterval {
  return { dayOfWeek: dayOfWeek(row.weekday), startTime: row.start_time, endTime: row.end_time }
}

export function toProvider(row: ProviderRow, hours: readonly ProviderHoursRow[]): Provider {
  return {
    id: row.id,
    firstName: row.first_name,
    lastName: row.last_name,
    title: row.title,
    specialty: row.specialty,
    npi: row.npi,
    email: row.email,
    phoneNumber: row.phone_number,
    active: row.active,
    timeZone: row.time_zone,
    slotMinutes: row.slot_minutes,
    userId: row.user_id,
    weeklyHours: hours.filter((h) => h.provider_id === row.id).map(toWorkingInterval),
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
    version: row.version,
  }
}

/** Row columns of a create or full-replace body, except `active` and `slot_minutes`. */
export function providerColumns(body: CreateProviderBody, timeZone: string) {
  return {
    first_name: body.firstName,
    last_name: body.lastName,
    title: body.title ?? null,
    specialty: body.specialty ?? null,
    npi: body.npi,
    email: body.email ?? null,
    phone_number: body.phoneNumber ?? null,
    time_zone: timeZone,
    user_id: body.userId ?? null,
  }
}

export function hoursRows(
  organizationId: number,
  providerId: number,
  weeklyHours: readonly WorkingInterval[],
): NewProviderHoursRow[] {
  return weeklyHours.map((interval) => ({
    provider_id: providerId,
    organization_id: organizationId,
    weekday: weekdayOf(interval.dayOfWeek),
    start_time: interval.startTime,
    end_time: interval.endTime,
  }))
}

export function toScheduleException(row: ProviderExceptionRow): ScheduleException {
  return {
    id: row.id,
    date: row.date,
    kind: row.kind as ScheduleException['kind'],
    startTime: row.start_time,
    endTime: row.end_time,
    reason: row.reason,
  }
}
