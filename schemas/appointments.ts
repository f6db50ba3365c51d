import { type Static, Type } from '@sinclair/typebox'
import {
  DateString,
  Envelope,
  Id,
  ListQuery,
  MergePatch,
  Named,
  Nullable,
  Page,
  StringEnum,
  Text,
  TimeOfDay,
  Timestamp,
  Version,
} from './common.js'

const strict = { additionalProperties: false } as const
const Optional = <T extends Parameters<typeof Nullable>[0]>(schema: T) => Type.Optional(Nullable(schema))

export const APPOINTMENT_STATUSES = [
  'SCHEDULED',
  'CONFIRMED',
  'CHECKED_IN',
  'IN_PROGRESS',
  'COMPLETED',
  'CANCELLED',
  'NO_SHOW',
] as const
export type AppointmentStatus = (typeof APPOINTMENT_STATUSES)[number]

/**
 * The appointment lifecycle, the one table of legal status changes: the service enforces it and
 * the status description below is written from it. Anything else is 409.
 */
export const APPOINTMENT_TRANSITIONS: Record<AppointmentStatus, readonly AppointmentStatus[]> = {
  SCHEDULED: ['CONFIRMED', 'CANCELLED', 'NO_SHOW'],
  CONFIRMED: ['CHECKED_IN', 'CANCELLED', 'NO_SHOW'],
  CHECKED_IN: ['IN_PROGRESS'],
  IN_PROGRESS: ['COMPLETED'],
  COMPLETED: [],
  CANCELLED: [],
  NO_SHOW: [],
}

/** Statuses that give the time back: the exclusion constraint of the appointments table ignores them. */
export const TIME_RELEASING_STATUSES: readonly AppointmentStatus[] = ['CANCELLED', 'NO_SHOW']

/** Statuses in which an appointment may still be moved to another time or provider. */
export const RESCHEDULABLE_STATUSES: readonly AppointmentStatus[] = ['SCHEDULED', 'CONFIRMED']

const transitionText = Object.entries(APPOINTMENT_TRANSITIONS)
  .map(([from, to]) => (to.length > 0 ? `${from} → ${to.join(' | ')}` : `${from} is final`))
  .join('; ')

const AppointmentStatus = StringEnum(APPOINTMENT_STATUSES, {
  description: `Lifecycle: ${transitionText}. Any other change is 409. CANCELLED and NO_SHOW free the time for new bookings. Only SCHEDULED and CONFIRMED appointments can be rescheduled.`,
})

const APPOINTMENT_TYPES = [
  'OFFICE_VISIT',
  'NEW_PATIENT',
  'FOLLOW_UP',
  'TELEHEALTH',
  'ANNUAL_PHYSICAL',
  'CONSULTATION',
  'PROCEDURE',
] as const
export const VisitType = (options: { description?: string } = {}) => StringEnum(APPOINTMENT_TYPES, options)

const PRIORITIES = ['ROUTINE', 'URGENT'] as const
const Priority = (options: { description?: string } = {}) => StringEnum(PRIORITIES, options)

const Duration = (description: string) =>
  Type.Integer({ minimum: 15, maximum: 120, description, examples: [30] })
const DURATION = 'Minutes of real time; defaults to the provider’s slot length'

const AppointmentTime = TimeOfDay({
  description: 'HH:MM:SS in whole minutes, wall-clock time in the provider’s time zone',
})

const TIME_RULES =
  '`appointmentDate` and `appointmentTime` are wall-clock values in the provider’s time zone. A time the clocks skip on a daylight-saving change day (e.g. 02:30 in America/New_York on the March change day) is 422; a time that occurs twice (clocks set back) means its first occurrence, the earlier instant. The appointment must lie within the provider’s working hours on that date, must not start in the past, and must not overlap another appointment of the provider that holds its time (409 RES_002, guaranteed by the database under concurrent bookings). Bookings need not follow the slot grid.'

export const CreateAppointmentBody = Named(
  'AppointmentCreate',
  Type.Object(
    {
      patientId: Id,
      providerId: Id,
      appointmentDate: DateString,
      appointmentTime: AppointmentTime,
      duration: Type.Optional(Duration(DURATION)),
      appointmentType: Type.Optional(VisitType({ description: 'Defaults to OFFICE_VISIT' })),
      priority: Type.Optional(Priority({ description: 'Defaults to ROUTINE' })),
      reason: Optional(Text(500, { description: 'Reason for the visit' })),
      notes: Optional(Text(2000)),
    },
    {
      ...strict,
      description: `A new appointment, status SCHEDULED. Patient and provider must belong to the caller’s organization and the provider must be active. ${TIME_RULES}`,
      examples: [
        {
          patientId: 1,
          providerId: 1,
          appointmentDate: '2030-05-14',
          appointmentTime: '09:30:00',
          appointmentType: 'FOLLOW_UP',
          reason: 'Blood pressure check',
        },
      ],
    },
  ),
)
export type CreateAppointmentBody = Static<typeof CreateAppointmentBody>

export const UpdateAppointmentBody = Named(
  'AppointmentUpdate',
  Type.Object(
    {
      providerId: Type.Optional(Id),
      appointmentDate: Type.Optional(DateString),
      appointmentTime: Type.Optional(AppointmentTime),
      duration: Type.Optional(Duration(DURATION)),
      appointmentType: Type.Optional(VisitType()),
      priority: Type.Optional(Priority()),
      reason: Optional(Text(500)),
      notes: Optional(Text(2000)),
      status: Type.Optional(AppointmentStatus),
    },
    {
      ...strict,
      minProperties: 1,
      examples: [{ appointmentDate: '2030-05-15', appointmentTime: '10:00:00' }, { status: 'CONFIRMED' }],
      description: `Changes the fields given; the others keep their values (null clears reason or notes). The patient cannot change. A new provider, date, time or duration reschedules: allowed while SCHEDULED or CONFIRMED, with the same checks as a booking. ${TIME_RULES} A new \`status\` must follow the lifecycle; to cancel, use POST /api/appointments/{id}/cancel.`,
    },
  ),
)
export type UpdateAppointmentBody = Static<typeof UpdateAppointmentBody>

export const PatchAppointmentBody = Named(
  'AppointmentPatch',
  MergePatch(UpdateAppointmentBody, {
    description:
      'A JSON Merge Patch (RFC 7396) of the appointment: only the members sent change, `null` removes `reason` or `notes` (on any other member it is 422: those can be changed, not removed). Rescheduling and status rules are those of PUT; the merged appointment must pass the same checks (422). Read-only members (`id`, `version`, `patientId`, …) are refused.',
    examples: [{ notes: 'Bring the glucose diary', reason: null }],
  }),
)
export type PatchAppointmentBody = Static<typeof PatchAppointmentBody>

export const CancelAppointmentBody = Named(
  'AppointmentCancel',
  Type.Object(
    {
      reason: Type.Optional(Text(500)),
      notifyPatient: Type.Optional(
        Type.Boolean({
          description:
            'Default true. Passed on in the appointment.cancelled event for the integration that informs patients; the service sends no messages itself.',
        }),
      ),
    },
    {
      ...strict,
      description:
        'Cancels a SCHEDULED or CONFIRMED appointment and frees its time; any other status is 409. The body may be empty.',
      examples: [{ reason: 'Patient called to cancel', notifyPatient: false }],
    },
  ),
)
export type CancelAppointmentBody = Static<typeof CancelAppointmentBody>

export const Appointment = Named(
  'Appointment',
  Type.Object({
    id: Id,
    patientId: Id,
    providerId: Id,
    appointmentDate: DateString,
    appointmentTime: Type.String({ description: 'HH:MM:SS as booked, in timeZone' }),
    timeZone: Type.String({ description: 'The provider’s time zone when the appointment was booked' }),
    startsAt: Timestamp,
    endsAt: Timestamp,
    duration: Type.Integer({ description: 'Minutes' }),
    appointmentType: VisitType(),
    priority: Priority(),
    reason: Nullable(Type.String()),
    notes: Nullable(Type.String()),
    status: AppointmentStatus,
    cancellationReason: Nullable(Type.String()),
    cancelledAt: Nullable(Timestamp),
    createdAt: Timestamp,
    updatedAt: Timestamp,
    version: Version,
  }),
)
export type Appointment = Static<typeof Appointment>

export const APPOINTMENT_SORT_FIELDS = ['appointmentDate', 'status', 'createdAt', 'updatedAt'] as const

export const AppointmentListQuery = ListQuery(APPOINTMENT_SORT_FIELDS, {
  patientId: Type.Optional(Id),
  providerId: Type.Optional(Id),
  status: Type.Optional(AppointmentStatus),
  appointmentType: Type.Optional(VisitType()),
  priority: Type.Optional(Priority()),
  appointmentDate: Type.Optional(DateString),
  dateFrom: Type.Optional(
    Type.String({ format: 'date', description: 'appointmentDate on or after (provider’s local date)' }),
  ),
  dateTo: Type.Optional(
    Type.String({ format: 'date', description: 'appointmentDate on or before; not before dateFrom' }),
  ),
})
export type AppointmentListQuery = Static<typeof AppointmentListQuery>

export const AvailableSlotsQuery = Type.Object(
  {
    providerId: Id,
    date: DateString,
    duration: Type.Optional(
      Duration('Slot length wanted in minutes; defaults to the provider’s slot length'),
    ),
  },
  strict,
)
export type AvailableSlotsQuery = Static<typeof AvailableSlotsQuery>

export const AvailableSlot = Named(
  'AvailableSlot',
  Type.Object({
    startTime: Type.String({ description: 'HH:MM:SS in the provider’s time zone; book with this time' }),
    endTime: Type.String({ description: 'HH:MM:SS in the provider’s time zone; 24:00:00 is midnight' }),
    startsAt: Timestamp,
    endsAt: Timestamp,
    available: Type.Boolean({
      description: 'false when the slot has started or overlaps an appointment that holds its time',
    }),
  }),
)
export type AvailableSlot = Static<typeof AvailableSlot>

export const AppointmentEnvelope = Envelope(Appointment)
export const AppointmentPageEnvelope = Envelope(Page(Appointment))
export const AvailableSlotsEnvelope = Envelope(
  Type.Array(AvailableSlot, {
    description:
      'The provider’s slots on the date: on the slot grid of each working interval (weekly hours and extra hours minus time off), `duration` long, ending within the interval. On a daylight-saving change day a start the clocks skip has no slot and an ambiguous one is its earlier instant. An inactive provider has none.',
  }),
)
