import type { AppointmentRow } from '../../../db/tables/appointments.js'
import type { Appointment } from '../../../schemas/appointments.js'
import type { EventData } from '../../../schemas/events.js'

/** The API's appointment from a row; only what the response schema declares is ever sent. */
export function toAppointment(row: AppointmentRow): Appointment {
  return {
    id: row.id,
    patientId: row.patient_id,
    providerId: row.provider_id,
    appointmentDate: row.appointment_date,
    appointmentTime: row.appointment_time,
    timeZone: row.time_zone,
    startsAt: row.starts_at.toISOString(),
    endsAt: row.ends_at.toISOString(),
    duration: row.duration_minutes,
    appointmentType: row.appointment_type as Appointment['appointmentType'],
    priority: row.priority as Appointment['priority'],
    reason: row.reason,
    notes: row.notes,
    status: row.status as Appointment['status'],
    cancellationReason: row.cancellation_reason,
    cancelledAt: row.cancelled_at?.toISOString() ?? null,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
    version: row.version,
  }
}

/** Exactly the specification's appointment.created data. */
export function toAppointmentCreatedData(row: AppointmentRow): EventData<'appointment.created'> {
  return {
    id: row.id,
    patientId: row.patient_id,
    providerId: row.provider_id,
    appointmentDate: row.appointment_date,
    appointmentTime: row.appointment_time,
  }
}

export function toAppointmentUpdatedData(row: AppointmentRow): EventData<'appointment.updated'> {
  return { ...toAppointmentCreatedData(row), status: row.status as Appointment['status'] }
}

export function toAppointmentCancelledData(
  row: AppointmentRow,
  notifyPatient: boolean,
): EventData<'appointment.cancelled'> {
  return {
    ...toAppointmentCreatedData(row),
    status: 'CANCELLED',
    reason: row.cancellation_reason,
    notifyPatient,
  }
}
