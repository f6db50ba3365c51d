import type { Appointment, AppointmentParticipant, CodeableConcept } from '@medplum/fhirtypes'
import { type Static, Type } from '@sinclair/typebox'
import type { Db } from '../../../db/database.js'
import type { AppointmentRow } from '../../../db/tables/appointments.js'
import {
  type AppointmentStatus,
  CreateAppointmentBody,
  UpdateAppointmentBody,
} from '../../../schemas/appointments.js'
import type { Actor } from '../../access/organization-scope.js'
import { invalidField } from '../../errors.js'
import type { ExpectedVersion } from '../../lib/versions.js'
import { timeOf, zonedDateTime, zonedInstant } from '../../scheduling/zoned-time.js'
import { changeAppointment, insertAppointment, requireAppointment } from '../appointments/service.js'
import { requirePatient } from '../patients/service.js'
import { requireProvider } from '../providers/service.js'
import { withoutUndefined } from './resource-elements.js'
import type { ResourceWrites } from './resource-writes.js'
import { namesNothing, referenced } from './written-references.js'

const MINUTE_MS = 60_000

const { patientId, providerId, appointmentDate, appointmentTime, duration, appointmentType, reason } =
  CreateAppointmentBody.properties

/**
 * The REST body an Appointment stands for: the fields of a booking and the status of a change,
 * each as its REST schema defines it. All are present, since an Appointment states them all (its
 * end, the duration). The date and time are those of `start` in UTC: the REST body's are in the
 * provider's time zone, which only the provider's record tells (providerWallClock).
 */
const AppointmentBody = Type.Required(
  Type.Object({
    patientId,
    providerId,
    appointmentDate,
    appointmentTime,
    duration,
    appointmentType,
    reason,
    status: UpdateAppointmentBody.properties.status,
  }),
  { additionalProperties: false },
)
type AppointmentBody = Static<typeof AppointmentBody>

/**
 * The read's statuses backwards. `booked` is SCHEDULED while the patient's participation
 * needs-action, CONFIRMED once accepted; `checked-in` is CHECKED_IN, or IN_PROGRESS for an
 * appointment already under way (statusChange).
 */
const STATUS_OF_FHIR: Partial<Record<NonNullable<Appointment['status']>, AppointmentStatus>> = {
  booked: 'CONFIRMED',
  'checked-in': 'CHECKED_IN',
  fulfilled: 'COMPLETED',
  cancelled: 'CANCELLED',
  noshow: 'NO_SHOW',
}

function statusOf(appointment: Appointment, patient: AppointmentParticipant | undefined): AppointmentStatus {
  if (appointment.status === 'booked' && patient?.status === 'needs-action') return 'SCHEDULED'
  const status = appointment.status && STATUS_OF_FHIR[appointment.status]
  if (!status) {
    throw invalidField(
      'status',
      `${appointment.status} is no status of this service’s appointments: booked, checked-in, fulfilled, cancelled or noshow`,
    )
  }
  return status
}

type Referenced = 'Patient' | 'Practitioner'

/** The first participant that is a record of `type`. */
const participantOf = (appointment: Appointment, type: Referenced) =>
  appointment.participant?.find((participant) => participant.actor?.reference?.startsWith(`${type}/`))

/** The id of the record a participant is (`Patient/12`: 12); undefined for a reference of another form. */
function idOf(participant: AppointmentParticipant | undefined, type: Referenced): number | undefined {
  const id = new RegExp(`^${type}/([0-9]+)$`).exec(participant?.actor?.reference ?? '')?.[1]
  return id === undefined ? undefined : Number(id)
}

/** The body field of the participant of `type`: its record's id; one of another form names nothing (422). */
function participantId(appointment: Appointment, type: Referenced, field: string): number | undefined {
  const participant = participantOf(appointment, type)
  const id = idOf(participant, type)
  if (participant && id === undefined) throw namesNothing(field, String(participant.actor?.reference))
  return id
}

/** Our visit type (OFFICE_VISIT, …) of an Appointment.appointmentType, if it codes one. */
type VisitTypeOf = (concept: CodeableConcept | undefined) => string | undefined

/** The REST body of a FHIR Appointment; the elements it has no field for are left to the comparison. */
function appointmentBody(appointment: Appointment, visitTypeOf: VisitTypeOf): AppointmentBody {
  const patient = participantOf(appointment, 'Patient')
  const start = Date.parse(appointment.start ?? '')
  const utc = Number.isNaN(start) ? undefined : new Date(start).toISOString()
  const end = Date.parse(appointment.end ?? '')
  return withoutUndefined({
    patientId: participantId(appointment, 'Patient', 'patientId'),
    providerId: participantId(appointment, 'Practitioner', 'providerId'),
    appointmentDate: utc?.slice(0, 10),
    appointmentTime: utc?.slice(11, 19),
    duration: Number.isNaN(end - start) ? undefined : (end - start) / MINUTE_MS,
    // An appointment without a type has the REST default's, as a booking without one does.
    appointmentType: visitTypeOf(appointment.appointmentType) ?? 'OFFICE_VISIT',
    reason: appointment.reasonCode?.[0]?.text ?? null,
    status: statusOf(appointment, patient),
  }) as AppointmentBody
}

const startOf = (body: AppointmentBody) => Date.parse(`${body.appointmentDate}T${body.appointmentTime}Z`)

// What a preview's row holds besides the body's columns: nothing the read renders.
const PREVIEW_ROW = {
  id: 0,
  organization_id: 0,
  time_zone: 'UTC',
  priority: 'ROUTINE',
  notes: null,
  cancelled_at: null,
  cancelled_by: null,
  created_by: null,
  updated_by: null,
  updated_at: new Date(0),
  version: 1,
}

/** The appointment's row once the body is stored over `current` (none on a create). */
function previewRow(body: AppointmentBody, current: Appointment | undefined): AppointmentRow {
  const start = startOf(body)
  return {
    ...PREVIEW_ROW,
    patient_id: body.patientId,
    provider_id: body.providerId,
    appointment_date: body.appointmentDate,
    appointment_time: body.appointmentTime,
    starts_at: new Date(start),
    ends_at: new Date(start + body.duration * MINUTE_MS),
    duration_minutes: body.duration,
    appointment_type: body.appointmentType,
    reason: body.reason,
    status: body.status,
    // Set by the cancellation and at booking: no update changes them.
    cancellation_reason: current?.cancelationReason?.text ?? null,
    created_at: new Date(current?.created ?? 0),
  }
}

/**
 * The body's start as the REST body gives it: the date and time of the provider's clocks at that
 * moment, which a booking reads back as the same moment. A moment in the hour clocks repeat when
 * set back is the one exception: a time there is booked at its first occurrence, so the second
 * cannot be (422).
 */
async function providerWallClock(db: Db, actor: Actor, body: AppointmentBody) {
  const provider = await referenced('providerId', `Practitioner/${body.providerId}`, () =>
    requireProvider(db, actor, body.providerId),
  )
  const start = startOf(body)
  const local = zonedDateTime(provider.time_zone, start)
  if (zonedInstant(provider.time_zone, local.date, local.minutes).instant !== start) {
    throw invalidField(
      'appointmentTime',
      `is the second occurrence of a time the clocks repeat in ${provider.time_zone} (set back); a booking at that time is at its first`,
    )
  }
  return { appointmentDate: local.date, appointmentTime: timeOf(local.minutes) }
}

/**
 * The status an update sets, if any: `checked-in` keeps an appointment under way IN_PROGRESS, and an
 * unchanged status is none (a cancelled appointment's included, whose status PUT never takes).
 */
function statusChange(current: string, sent: AppointmentStatus): { status?: AppointmentStatus } {
  const meant = sent === 'CHECKED_IN' && current === 'IN_PROGRESS' ? current : sent
  return meant === current ? {} : { status: meant }
}

/** A booking as POST /api/appointments makes it: a new appointment is SCHEDULED. */
async function book(db: Db, actor: Actor, body: AppointmentBody): Promise<AppointmentRow> {
  if (body.status !== 'SCHEDULED') {
    throw invalidField(
      'status',
      'a new appointment is booked, its patient’s participation needs-action; it is confirmed, checked in and so on by updates',
    )
  }
  await referenced('patientId', `Patient/${body.patientId}`, () => requirePatient(db, actor, body.patientId))
  return insertAppointment(db, actor, {
    patientId: body.patientId,
    providerId: body.providerId,
    ...(await providerWallClock(db, actor, body)),
    duration: body.duration,
    appointmentType: body.appointmentType,
    reason: body.reason,
  })
}

/**
 * A change as PUT /api/appointments/{id} makes it: a new provider, start or duration reschedules,
 * a new status follows the lifecycle. The patient stays; an unchanged start keeps the date and time
 * it was booked at.
 */
async function change(
  db: Db,
  actor: Actor,
  id: number,
  body: AppointmentBody,
  expected: ExpectedVersion,
): Promise<AppointmentRow> {
  const current = await requireAppointment(db, actor, id)
  if (body.patientId !== current.patient_id) {
    throw invalidField('patientId', 'cannot name another patient: an appointment is for one patient')
  }
  const unmoved = body.providerId === current.provider_id && startOf(body) === current.starts_at.getTime()
  const when = unmoved
    ? { appointmentDate: current.appointment_date, appointmentTime: current.appointment_time }
    : await providerWallClock(db, actor, body)
  return changeAppointment(
    db,
    actor,
    id,
    {
      providerId: body.providerId,
      ...when,
      duration: body.duration,
      appointmentType: body.appointmentType,
      reason: body.reason,
      ...statusChange(current.status, body.status),
    },
    expected,
  )
}

/**
 * Appointment writes through the appointments service: those of `POST /api/appointments` (a
 * booking) and `PUT /api/appointments/{id}` (a reschedule or status change). Cancelling is the
 * REST cancel route's (PUT refuses CANCELLED); no appointment is ever deleted.
 */
export function appointmentWrites(
  toFhir: (row: AppointmentRow) => Appointment & { id: string },
  visitTypeOf: VisitTypeOf,
): ResourceWrites<Appointment, AppointmentBody> {
  return {
    rest: { create: 'POST /api/appointments', update: 'PUT /api/appointments/:id' },
    bodySchema: AppointmentBody,
    fieldExpressions: {
      patientId: 'Appointment.participant.actor',
      providerId: 'Appointment.participant.actor',
      appointmentDate: 'Appointment.start',
      appointmentTime: 'Appointment.start',
      duration: 'Appointment.end',
      appointmentType: 'Appointment.appointmentType',
      reason: 'Appointment.reasonCode.text',
      status: 'Appointment.status',
    },
    bodyOf: (appointment) => appointmentBody(appointment, visitTypeOf),
    preview: (body, current) => toFhir(previewRow(body, current)),
    patientOf: (appointment) => idOf(participantOf(appointment, 'Patient'), 'Patient'),
    create: async (db, actor, body) => toFhir(await book(db, actor, body)),
    update: async (db, actor, id, body, expected) => toFhir(await change(db, actor, id, body, expected)),
  }
}
