import { type Static, type TSchema, Type } from '@sinclair/typebox'
import { APPOINTMENT_STATUSES, VisitType } from './appointments.js'
import { DateString, Id, Named, Nullable, StringEnum, Timestamp, Version } from './common.js'
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
const PatientEventData = Named(
  'PatientEventData',
  Type.Object(
    {
      id: Id,
      mrn: Type.String(),
      status: StringEnum(PATIENT_STATUSES),
      version: Version,
      deleted: Type.Boolean({
        description: 'true when the change was a deletion (the patient left all reads)',
      }),
    },
    {
      description:
        'Identifiers only, no demographics. patient.created: POST /api/patients; patient.updated: PUT and PATCH /api/patients/{id} and DELETE /api/patients/{id} (deleted: true).',
    },
  ),
)

/** `data` of invoice.created. */
const InvoiceEventData = Named(
  'InvoiceEventData',
  Type.Object({
    id: Id,
    patientId: Id,
    number: Type.String(),
    total: Type.Integer({ description: 'Minor units' }),
    currency: Type.String(),
    status: Type.String(),
  }),
)

/** `data` of payment.received. */
const PaymentEventData = Named(
  'PaymentEventData',
  Type.Object({
    id: Id,
    invoiceId: Id,
    amount: Type.Integer({ description: 'Minor units' }),
    currency: Type.String(),
    balance: Type.Integer({ description: "The invoice's open balance after this payment, minor units" }),
  }),
)

const appointmentIdentity = {
  id: Id,
  patientId: Id,
  providerId: Id,
  appointmentDate: DateString,
  appointmentTime: Type.String({ description: 'HH:MM:SS, wall-clock time in the provider’s time zone' }),
}

/** `data` of appointment.created: exactly the fields the specification shows. */
const AppointmentCreatedEventData = Named(
  'AppointmentCreatedEventData',
  Type.Object(appointmentIdentity, { additionalProperties: false }),
)

/** `data` of appointment.updated: after a reschedule or a status change. */
const AppointmentUpdatedEventData = Named(
  'AppointmentUpdatedEventData',
  Type.Object(
    { ...appointmentIdentity, status: StringEnum(APPOINTMENT_STATUSES) },
    { additionalProperties: false },
  ),
)

/** `data` of appointment.cancelled. */
const AppointmentCancelledEventData = Named(
  'AppointmentCancelledEventData',
  Type.Object(
    {
      ...appointmentIdentity,
      status: Type.Literal('CANCELLED'),
      reason: Nullable(Type.String()),
      notifyPatient: Type.Boolean({ description: 'Whether the canceller asked for the patient to be told' }),
    },
    { additionalProperties: false },
  ),
)

/** `data` of encounter.created: identifiers only, no clinical text. */
const EncounterCreatedEventData = Named(
  'EncounterCreatedEventData',
  Type.Object(
    {
      id: Id,
      patientId: Id,
      providerId: Id,
      appointmentId: Nullable(Id),
      encounterDate: DateString,
      encounterType: VisitType(),
      status: StringEnum(ENCOUNTER_STATUSES),
    },
    { additionalProperties: false },
  ),
)

/**
 * The data shape of each event, in one place: the outbox writes these and the webhook
 * documentation publishes them. Events of areas not built yet have no entry.
 */
export const EVENT_DATA = {
  'patient.created': PatientEventData,
  'patient.updated': PatientEventData,
  'invoice.created': InvoiceEventData,
  'payment.received': PaymentEventData,
  'appointment.created': AppointmentCreatedEventData,
  'appointment.updated': AppointmentUpdatedEventData,
  'appointment.cancelled': AppointmentCancelledEventData,
  'encounter.created': EncounterCreatedEventData,
} satisfies Partial<Record<EventName, TSchema>>

export type EmittedEvent = keyof typeof EVENT_DATA
export type EventData<E extends EmittedEvent> = Static<(typeof EVENT_DATA)[E]>

/**
 * Sent only when an administrator asks for a test delivery, never for a change; its own name, so
 * that no receiver mistakes it for a real patient or appointment.
 */
export const TEST_EVENT = 'webhook.test'
export const TestEventData = Named(
  'TestEventData',
  Type.Object(
    { webhookId: Id, message: Type.String() },
    { description: 'POST /api/webhooks/{id}/test, to that webhook only' },
  ),
)

/** The body every webhook receives. */
export const EventPayload = <T extends TSchema>(event: EventName | typeof TEST_EVENT, data: T) =>
  Type.Object(
    {
      event: Type.Literal(event),
      timestamp: Timestamp,
      data,
    },
    // patient.created: PatientCreatedEvent
    { title: `${event.replace(/(?:^|\.)([a-z])/g, (_, letter: string) => letter.toUpperCase())}Event` },
  )

/** A stored payload as the outbox holds it, whatever the event. */
export interface StoredPayload {
  event: string
  timestamp: string
  data: Record<string, unknown>
}
