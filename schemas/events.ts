import { type Static, type TSchema, Type } from '@sinclair/typebox'
import { APPOINTMENT_STATUSES, VisitType } from './appointments.js'
import { DateString, Id, Nullable, Timestamp } from './common.js'
import { ENCOUNTER_STATUSES } from './encounters.js'
import { PATIENT_STATUSES } from './patients.js'

/** Every event name of the API specification. */
export const EVENT_NAMES = [
  'patient.created',
  'patient.updated',
  'appointment.created',
  'appointment.updated',
  'appointment.cancelled',
  'encounter.created',
  'invoice.created',
  'payment.received',
] as const
export type EventName = (typeof EVENT_NAMES)[number]

/** `data` of patient.created and patient.updated: identifiers only, no demographics. */
export const PatientEventData = Type.Object({
  id: Id,
  mrn: Type.String(),
  status: Type.Union(PATIENT_STATUSES.map((s) => Type.Literal(s))),
  deleted: Type.Boolean({ description: 'true when the change was a deletion (the patient left all reads)' }),
})

const appointmentIdentity = {
  id: Id,
  patientId: Id,
  providerId: Id,
  appointmentDate: DateString,
  appointmentTime: Type.String({ description: 'HH:MM:SS, wall-clock time in the provider’s time zone' }),
}

/** `data` of appointment.created: exactly the fields the specification shows. */
export const AppointmentCreatedEventData = Type.Object(appointmentIdentity, { additionalProperties: false })

/** `data` of appointment.updated: after a reschedule or a status change. */
export const AppointmentUpdatedEventData = Type.Object(
  { ...appointmentIdentity, status: Type.Union(APPOINTMENT_STATUSES.map((s) => Type.Literal(s))) },
  { additionalProperties: false },
)

/** `data` of appointment.cancelled. */
export const AppointmentCancelledEventData = Type.Object(
  {
    ...appointmentIdentity,
    status: Type.Literal('CANCELLED'),
    reason: Nullable(Type.String()),
    notifyPatient: Type.Boolean({ description: 'Whether the canceller asked for the patient to be told' }),
  },
  { additionalProperties: false },
)

/** `data` of encounter.created: identifiers only, no clinical text. */
export const EncounterCreatedEventData = Type.Object(
  {
    id: Id,
    patientId: Id,
    providerId: Id,
    appointmentId: Nullable(Id),
    encounterDate: DateString,
    encounterType: VisitType(),
    status: Type.Union(ENCOUNTER_STATUSES.map((s) => Type.Literal(s))),
  },
  { additionalProperties: false },
)

/**
 * The data shape of each event, in one place: the outbox writes these and the webhook
 * documentation publishes them. Events of areas not built yet have no entry.
 */
export const EVENT_DATA = {
  'patient.created': PatientEventData,
  'patient.updated': PatientEventData,
  'appointment.created': AppointmentCreatedEventData,
  'appointment.updated': AppointmentUpdatedEventData,
  'appointment.cancelled': AppointmentCancelledEventData,
  'encounter.created': EncounterCreatedEventData,
} satisfies Partial<Record<EventName, TSchema>>

export type EmittedEvent = keyof typeof EVENT_DATA
export type EventData<E extends EmittedEvent> = Static<(typeof EVENT_DATA)[E]>

/** The body every webhook receives. */
export const EventPayload = <T extends TSchema>(event: EventName, data: T) =>
  Type.Object({
    event: Type.Literal(event),
    timestamp: Timestamp,
    data,
  })
