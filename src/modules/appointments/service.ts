import type { Db, Trx } from '../../../db/database.js'
import type { AppointmentRow } from '../../../db/tables/appointments.js'
import type { ProviderRow } from '../../../db/tables/providers.js'
import {
  APPOINTMENT_TRANSITIONS,
  type Appointment,
  type AppointmentListQuery,
  type AppointmentStatus,
  type CancelAppointmentBody,
  type CreateAppointmentBody,
  type PatchAppointmentBody,
  RESCHEDULABLE_STATUSES,
  UpdateAppointmentBody,
} from '../../../schemas/appointments.js'
import { type Actor, missingRecord, ownerOrganization } from '../../access/organization-scope.js'
import { auditChange } from '../../audit/change-audit.js'
import { conflict, invalidField, invalidFields } from '../../errors.js'
import { patchRecord, projectOnto } from '../../lib/merge-patch.js'
import { checkDateRange, sortOrder, splitListQuery } from '../../lib/paging.js'
import { type RecordList, recordList } from '../../lib/row-list.js'
import { atExpectedVersion, type ExpectedVersion } from '../../lib/versions.js'
import { transactionWithEvents } from '../../outbox/doorbell.js'
import { enqueueEvent } from '../../outbox/enqueue.js'
import { withinWorkingHours } from '../../scheduling/availability.js'
import { minutesOf, zonedInstant } from '../../scheduling/zoned-time.js'
import { requirePatient } from '../patients/service.js'
import { requireProviderForBooking, workingIntervalsOn } from '../providers/service.js'
import {
  toAppointment,
  toAppointmentCancelledData,
  toAppointmentCreatedData,
  toAppointmentUpdatedData,
} from './mapper.js'
import { APPOINTMENT_SORT_COLUMNS, appointmentRecords, appointmentRows } from './queries.js'

const MINUTE_MS = 60_000

async function missingAppointment(db: Db, actor: Actor, id: number): Promise<never> {
  return missingRecord('Appointment', id, await ownerOrganization(db, 'appointments', id), actor)
}

/** The appointment locked for a change, at the version `If-Match` names if it names one. */
async function lockAppointmentAt(trx: Trx, actor: Actor, id: number, expectedVersion: ExpectedVersion) {
  const locked = await appointmentRecords.lock(trx, actor.organizationId, id)
  return atExpectedVersion(locked, expectedVersion, () => missingAppointment(trx, actor, id))
}

/** The lifecycle table decides; anything it does not list is 409. */
function checkTransition(from: AppointmentStatus, to: AppointmentStatus): void {
  const allowed = APPOINTMENT_TRANSITIONS[from]
  if (!allowed.includes(to)) {
    throw conflict(
      `The appointment is ${from} and cannot become ${to}; ${
        allowed.length > 0 ? `from ${from} it can become ${allowed.join(', ')}` : `${from} is final`
      }`,
    )
  }
}

/**
 * The instants of a booking of `provider` at a wall-clock date and time, after the checks every
 * booking and reschedule passes: an active provider, a time that exists in the provider's zone
 * (a DST gap is 422; an ambiguous time is its earlier instant), not in the past, within working
 * hours. Overlaps are left to the database's exclusion constraint, which holds under concurrency;
 * the caller holds the provider's calendar lock, so concurrent bookings reach it one at a time.
 */
async function bookableTime(trx: Trx, provider: ProviderRow, date: string, time: string, duration: number) {
  if (!provider.active) throw conflict(`Provider ${provider.id} is inactive and takes no new appointments`)
  const start = zonedInstant(provider.time_zone, date, minutesOf(time))
  if (start.inGap) {
    throw invalidFields(
      [
        {
          path: 'appointmentTime',
          message: 'does not exist on that date in the provider’s time zone (daylight saving time)',
        },
      ],
      `appointmentTime ${time} does not exist on ${date} in ${provider.time_zone}: the clocks skip it for daylight saving time`,
    )
  }
  const span = { start: start.instant, end: start.instant + duration * MINUTE_MS }
  if (span.start <= Date.now()) {
    throw invalidFields(
      ['appointmentDate', 'appointmentTime'].map((path) => ({ path, message: 'must not be in the past' })),
      'The appointment would start in the past',
    )
  }
  const intervals = await workingIntervalsOn(trx, provider, date)
  if (!withinWorkingHours(provider.time_zone, date, intervals, span)) {
    throw invalidFields(
      ['appointmentTime', 'duration'].map((path) => ({
        path,
        message: 'must keep the appointment within the provider’s working hours',
      })),
      `The appointment is outside the provider’s working hours on ${date}`,
    )
  }
  return { time_zone: provider.time_zone, starts_at: new Date(span.start), ends_at: new Date(span.end) }
}

export const createAppointment = async (
  db: Db,
  actor: Actor,
  body: CreateAppointmentBody,
): Promise<Appointment> => toAppointment(await insertAppointment(db, actor, body))

/** Books an appointment (appointment.created): the row as stored. */
export async function insertAppointment(
  db: Db,
  actor: Actor,
  body: CreateAppointmentBody,
): Promise<AppointmentRow> {
  return transactionWithEvents(db, async (trx) => {
    await requirePatient(trx, actor, body.patientId)
    const provider = await requireProviderForBooking(trx, actor, body.providerId)
    const duration = body.duration ?? provider.slot_minutes
    const when = await bookableTime(trx, provider, body.appointmentDate, body.appointmentTime, duration)
    const row = await appointmentRecords.insert(trx, {
      organization_id: actor.organizationId,
      patient_id: body.patientId,
      provider_id: provider.id,
      appointment_date: body.appointmentDate,
      appointment_time: body.appointmentTime,
      ...when,
      duration_minutes: duration,
      appointment_type: body.appointmentType ?? 'OFFICE_VISIT',
      priority: body.priority ?? 'ROUTINE',
      reason: body.reason ?? null,
      notes: body.notes ?? null,
      cancellation_reason: null,
      cancelled_at: null,
      cancelled_by: null,
      created_by: actor.userId,
      updated_by: actor.userId,
    })
    await enqueueEvent(trx, actor.organizationId, 'appointment.created', toAppointmentCreatedData(row))
    await auditChange(trx, [row.id])
    return row
  })
}

/** The appointment, if of the caller's organization; otherwise 403 or 404. */
export async function requireAppointment(db: Db, actor: Actor, id: number): Promise<AppointmentRow> {
  return (await appointmentRecords.find(db, actor.organizationId, id)) ?? missingAppointment(db, actor, id)
}

export async function getAppointment(db: Db, actor: Actor, id: number): Promise<Appointment> {
  return toAppointment(await requireAppointment(db, actor, id))
}

/** Whether the body moves the appointment: another provider, date, time or duration. */
function movesAppointment(current: AppointmentRow, body: UpdateAppointmentBody): boolean {
  return (
    (body.providerId !== undefined && body.providerId !== current.provider_id) ||
    (body.appointmentDate !== undefined && body.appointmentDate !== current.appointment_date) ||
    (body.appointmentTime !== undefined && body.appointmentTime !== current.appointment_time) ||
    (body.duration !== undefined && body.duration !== current.duration_minutes)
  )
}

async function rescheduled(trx: Trx, actor: Actor, current: AppointmentRow, body: UpdateAppointmentBody) {
  const status = current.status as AppointmentStatus
  if (!RESCHEDULABLE_STATUSES.includes(status)) {
    throw conflict(
      `The appointment is ${status} and cannot be rescheduled; only ${RESCHEDULABLE_STATUSES.join(' and ')} ones can`,
    )
  }
  const provider = await requireProviderForBooking(trx, actor, body.providerId ?? current.provider_id)
  const date = body.appointmentDate ?? current.appointment_date
  const time = body.appointmentTime ?? current.appointment_time
  const duration = body.duration ?? current.duration_minutes
  return {
    provider_id: provider.id,
    appointment_date: date,
    appointment_time: time,
    duration_minutes: duration,
    ...(await bookableTime(trx, provider, date, time, duration)),
  }
}

export const updateAppointment = async (
  db: Db,
  actor: Actor,
  id: number,
  body: UpdateAppointmentBody,
  expectedVersion: ExpectedVersion,
): Promise<Appointment> => toAppointment(await changeAppointment(db, actor, id, body, expectedVersion))

/** updateAppointment, answering the row as stored. */
export async function changeAppointment(
  db: Db,
  actor: Actor,
  id: number,
  body: UpdateAppointmentBody,
  expectedVersion: ExpectedVersion,
): Promise<AppointmentRow> {
  if (body.status === 'CANCELLED') {
    throw invalidField(
      'status',
      'CANCELLED is set by POST /api/appointments/{id}/cancel, which records the reason',
    )
  }
  return transactionWithEvents(db, async (trx) => {
    const current = await lockAppointmentAt(trx, actor, id, expectedVersion)
    if (body.status !== undefined && body.status !== current.status) {
      checkTransition(current.status as AppointmentStatus, body.status)
    }
    const updated = await appointmentRecords.update(trx, actor.organizationId, id, {
      ...(movesAppointment(current, body) ? await rescheduled(trx, actor, current, body) : {}),
      ...(body.appointmentType !== undefined ? { appointment_type: body.appointmentType } : {}),
      ...(body.priority !== undefined ? { priority: body.priority } : {}),
      ...(body.reason !== undefined ? { reason: body.reason } : {}),
      ...(body.notes !== undefined ? { notes: body.notes } : {}),
      ...(body.status !== undefined ? { status: body.status } : {}),
      updated_by: actor.userId,
    })
    if (!updated) return current
    await enqueueEvent(trx, actor.organizationId, 'appointment.updated', toAppointmentUpdatedData(updated))
    await auditChange(trx, [updated.id])
    return updated
  })
}

/** Members every appointment has: a merge patch may change them but not remove them (null). */
const UNREMOVABLE_MEMBERS = [
  'providerId',
  'appointmentDate',
  'appointmentTime',
  'duration',
  'appointmentType',
  'priority',
  'status',
] as const

/**
 * A JSON Merge Patch of the appointment, written as a PUT of the merged fields: unchanged
 * provider, date, time and duration do not reschedule, an unchanged status is no transition, and
 * a removed `reason` or `notes` is cleared.
 */
export async function patchAppointment(
  db: Db,
  actor: Actor,
  id: number,
  patch: PatchAppointmentBody,
  expectedVersion: ExpectedVersion,
  validate: (merged: unknown) => UpdateAppointmentBody,
): Promise<Appointment> {
  const removed = UNREMOVABLE_MEMBERS.filter((name) => patch[name] === null)
  if (removed.length > 0) {
    throw invalidFields(
      removed.map((path) => ({ path, message: 'cannot be removed, only changed' })),
      `${removed.join(', ')} cannot be removed, only changed`,
    )
  }
  return patchRecord({
    patch,
    expected: expectedVersion,
    read: () => getAppointment(db, actor, id),
    // A cancelled appointment's status is left out: CANCELLED is only ever set by the cancel operation.
    bodyOf: ({ status, ...appointment }) =>
      projectOnto(UpdateAppointmentBody, status === 'CANCELLED' ? appointment : { ...appointment, status }),
    validate,
    write: (body, version) =>
      updateAppointment(
        db,
        actor,
        id,
        { ...body, reason: body.reason ?? null, notes: body.notes ?? null },
        version,
      ),
  })
}

export async function cancelAppointment(
  db: Db,
  actor: Actor,
  id: number,
  body: CancelAppointmentBody,
  expectedVersion: ExpectedVersion,
): Promise<Appointment> {
  return transactionWithEvents(db, async (trx) => {
    const current = await lockAppointmentAt(trx, actor, id, expectedVersion)
    checkTransition(current.status as AppointmentStatus, 'CANCELLED')
    const cancelled = await appointmentRecords.update(trx, actor.organizationId, id, {
      status: 'CANCELLED',
      cancellation_reason: body.reason ?? null,
      cancelled_at: new Date(),
      cancelled_by: actor.userId,
      updated_by: actor.userId,
    })
    if (!cancelled) return toAppointment(current)
    await enqueueEvent(
      trx,
      actor.organizationId,
      'appointment.cancelled',
      toAppointmentCancelledData(cancelled, body.notifyPatient ?? true),
    )
    await auditChange(trx, [cancelled.id])
    return toAppointment(cancelled)
  })
}

const DEFAULT_SORT = { field: 'appointmentDate', direction: 'asc' } as const

/** The organization's appointments a list query asks for. */
export function listAppointments(db: Db, actor: Actor, query: AppointmentListQuery): RecordList<Appointment> {
  const { paging, filters } = splitListQuery(query)
  checkDateRange(filters)
  const sort = sortOrder(paging.sort, APPOINTMENT_SORT_COLUMNS, DEFAULT_SORT)
  return recordList(appointmentRows(db, actor.organizationId, filters), paging, sort, (rows) =>
    rows.map(toAppointment),
  )
}
