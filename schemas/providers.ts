import { type Static, Type } from '@sinclair/typebox'
import {
  DateString,
  Deleted,
  Email,
  EndTimeOfDay,
  Envelope,
  Id,
  ListQuery,
  MergePatch,
  Named,
  Nullable,
  Page,
  PhoneNumber,
  StringEnum,
  Text,
  TimeOfDay,
  Timestamp,
  Version,
} from './common.js'

const strict = { additionalProperties: false } as const
const Optional = <T extends Parameters<typeof Nullable>[0]>(schema: T) => Type.Optional(Nullable(schema))

/** ISO order: index + 1 is the ISO weekday number. */
export const DAYS_OF_WEEK = [
  'MONDAY',
  'TUESDAY',
  'WEDNESDAY',
  'THURSDAY',
  'FRIDAY',
  'SATURDAY',
  'SUNDAY',
] as const
export const DayOfWeek = StringEnum(DAYS_OF_WEEK, { description: 'Day of the week' })
export type DayOfWeek = Static<typeof DayOfWeek>

const EXCEPTION_KINDS = ['TIME_OFF', 'EXTRA_HOURS'] as const

const Npi = Type.String({
  pattern: '^[0-9]{10}$',
  description:
    'National Provider Identifier: 10 digits, the last a Luhn check digit over the other nine prefixed with 80840. Unique within the organization (a clinician working at two practices is a provider of each).',
  examples: ['1234567893'],
})

const TimeZone = Type.String({
  minLength: 1,
  maxLength: 64,
  pattern: '^[A-Za-z][A-Za-z0-9_+/-]*$',
  description:
    'IANA time zone name (e.g. America/New_York), stored under its canonical name (US/Eastern becomes America/New_York). Working hours, exceptions and appointment dates and times of this provider are wall-clock times in this zone.',
  examples: ['America/New_York'],
})

const SlotMinutes = Type.Integer({
  minimum: 15,
  maximum: 120,
  multipleOf: 5,
  description:
    'Length of one appointment slot in minutes: the step of the slot grid and the default appointment duration',
  examples: [15, 20, 30],
})

export const WorkingInterval = Named(
  'WorkingInterval',
  Type.Object(
    { dayOfWeek: DayOfWeek, startTime: TimeOfDay(), endTime: EndTimeOfDay },
    {
      ...strict,
      description: 'One interval of weekly working hours; endTime after startTime (no overnight intervals)',
    },
  ),
)
export type WorkingInterval = Static<typeof WorkingInterval>

const WeeklyHours = Type.Array(WorkingInterval, {
  maxItems: 70,
  description:
    'Weekly working hours: any number of intervals per day (e.g. 09:00–12:00 and 13:00–17:00 for a lunch break). Intervals of one day must not overlap; adjacent ones join. A day without intervals is not worked.',
  examples: [
    [
      { dayOfWeek: 'MONDAY', startTime: '09:00:00', endTime: '12:00:00' },
      { dayOfWeek: 'MONDAY', startTime: '13:00:00', endTime: '17:00:00' },
    ],
  ],
})

const providerInputProperties = {
  firstName: Text(100),
  lastName: Text(100),
  title: Optional(Text(50, { description: 'Credentials, e.g. MD, DO, NP', examples: ['MD'] })),
  specialty: Optional(Text(100, { examples: ['Family Medicine'] })),
  npi: Npi,
  email: Optional(Email),
  phoneNumber: Optional(PhoneNumber),
  active: Type.Optional(
    Type.Boolean({ description: 'Inactive providers keep their records but take no new appointments' }),
  ),
  timeZone: TimeZone,
  slotMinutes: Type.Optional(SlotMinutes),
  userId: Optional(Id),
}

export const CreateProviderBody = Named(
  'ProviderCreate',
  Type.Object(
    { ...providerInputProperties, weeklyHours: Type.Optional(WeeklyHours) },
    {
      ...strict,
      description:
        'A new provider. `active` defaults to true, `slotMinutes` to 30, `weeklyHours` to none. `userId` optionally links the user account of the provider (a user of the same organization, linked to at most one provider).',
      examples: [
        {
          firstName: 'Grace',
          lastName: 'Hopper',
          title: 'MD',
          specialty: 'Family Medicine',
          npi: '1234567893',
          timeZone: 'America/New_York',
          slotMinutes: 20,
          weeklyHours: [{ dayOfWeek: 'MONDAY', startTime: '09:00:00', endTime: '17:00:00' }],
        },
      ],
    },
  ),
)
export type CreateProviderBody = Static<typeof CreateProviderBody>

export const UpdateProviderBody = Named(
  'ProviderUpdate',
  Type.Object(providerInputProperties, {
    ...strict,
    description:
      'Replaces the provider record (weekly hours have their own operation). Optional fields left out are cleared, except `active` and `slotMinutes`, which keep their values when omitted. Changing `timeZone` leaves booked appointments at their instants (each keeps the zone it was booked in).',
    examples: [
      {
        firstName: 'Grace',
        lastName: 'Hopper',
        title: 'MD',
        specialty: 'Internal Medicine',
        npi: '1234567893',
        timeZone: 'America/Chicago',
      },
    ],
  }),
)
export type UpdateProviderBody = Static<typeof UpdateProviderBody>

export const PatchProviderBody = Named(
  'ProviderPatch',
  MergePatch(UpdateProviderBody, {
    description:
      'A JSON Merge Patch (RFC 7396) of the provider: only the members sent change, `null` removes an optional one (`"email": null` clears the e-mail), values are replaced. Weekly hours have their own operation. The merged record must pass the same checks as a full replacement (422). Read-only members (`id`, `version`, `weeklyHours`, `createdAt`, …) are refused.',
    examples: [{ specialty: 'Internal Medicine', phoneNumber: null }],
  }),
)
export type PatchProviderBody = Static<typeof PatchProviderBody>

export const WeeklyHoursBody = Named(
  'WeeklyHours',
  Type.Object(
    { weeklyHours: WeeklyHours },
    {
      ...strict,
      description:
        'Replaces the weekly working hours. Booked appointments stay as they are, also outside the new hours.',
      examples: [
        {
          weeklyHours: [
            { dayOfWeek: 'MONDAY', startTime: '09:00:00', endTime: '12:00:00' },
            { dayOfWeek: 'MONDAY', startTime: '13:00:00', endTime: '17:00:00' },
            { dayOfWeek: 'WEDNESDAY', startTime: '08:00:00', endTime: '14:00:00' },
          ],
        },
      ],
    },
  ),
)
export type WeeklyHoursBody = Static<typeof WeeklyHoursBody>

export const Provider = Named(
  'Provider',
  Type.Object({
    id: Id,
    firstName: Type.String(),
    lastName: Type.String(),
    title: Nullable(Type.String()),
    specialty: Nullable(Type.String()),
    npi: Type.String(),
    email: Nullable(Type.String({ format: 'email' })),
    phoneNumber: Nullable(Type.String()),
    active: Type.Boolean(),
    timeZone: Type.String(),
    slotMinutes: Type.Integer(),
    userId: Nullable(Id),
    weeklyHours: Type.Array(WorkingInterval, { description: 'Sorted by day and start time' }),
    createdAt: Timestamp,
    updatedAt: Timestamp,
    version: Version,
  }),
)
export type Provider = Static<typeof Provider>

export const PROVIDER_SORT_FIELDS = [
  'lastName',
  'firstName',
  'specialty',
  'npi',
  'createdAt',
  'updatedAt',
] as const

export const ProviderListQuery = ListQuery(PROVIDER_SORT_FIELDS, {
  specialty: Type.Optional(Type.String({ maxLength: 100, description: 'Exact match, case-insensitive' })),
  active: Type.Optional(Type.Boolean()),
  lastName: Type.Optional(Type.String({ maxLength: 100, description: 'Exact match, case-insensitive' })),
  npi: Type.Optional(Type.String({ maxLength: 10 })),
})
export type ProviderListQuery = Static<typeof ProviderListQuery>

export const ExceptionBody = Named(
  'ScheduleExceptionCreate',
  Type.Object(
    {
      date: DateString,
      kind: StringEnum(EXCEPTION_KINDS, {
        description: 'TIME_OFF removes working time on the date; EXTRA_HOURS adds some',
      }),
      startTime: Type.Optional(TimeOfDay()),
      endTime: Type.Optional(EndTimeOfDay),
      reason: Optional(Text(200)),
    },
    {
      ...strict,
      description:
        'A dated exception to the weekly hours, in the provider’s time zone. EXTRA_HOURS needs startTime and endTime; TIME_OFF without them is the whole day. Time off wins over hours on the same date. Booked appointments are not cancelled by time off; they stay on the schedule.',
      examples: [{ date: '2030-07-04', kind: 'TIME_OFF', reason: 'Holiday' }],
    },
  ),
)
export type ExceptionBody = Static<typeof ExceptionBody>

export const ScheduleException = Named(
  'ScheduleException',
  Type.Object({
    id: Id,
    date: DateString,
    kind: StringEnum(EXCEPTION_KINDS),
    startTime: Nullable(Type.String()),
    endTime: Nullable(Type.String()),
    reason: Nullable(Type.String()),
  }),
)
export type ScheduleException = Static<typeof ScheduleException>

export const ExceptionParams = Type.Object({ id: Id, exceptionId: Id }, strict)
export type ExceptionParams = Static<typeof ExceptionParams>

export const SCHEDULE_MAX_DAYS = 31

export const ScheduleQuery = Type.Object(
  {
    startDate: DateString,
    endDate: Type.String({
      format: 'date',
      description: `YYYY-MM-DD, on or after startDate; at most ${SCHEDULE_MAX_DAYS} days in all`,
    }),
  },
  strict,
)
export type ScheduleQuery = Static<typeof ScheduleQuery>

const Interval = Type.Object({ startTime: Type.String(), endTime: Type.String() })

const TimeSpan = Type.Object({
  startTime: Type.String({ description: 'Wall-clock time in the provider’s zone' }),
  endTime: Type.String({ description: 'Wall-clock time in the provider’s zone; 24:00:00 is midnight' }),
  startsAt: Timestamp,
  endsAt: Timestamp,
})

export const ScheduleDay = Named(
  'ScheduleDay',
  Type.Object({
    date: DateString,
    dayOfWeek: DayOfWeek,
    workingHours: Type.Array(Interval, {
      description: 'Weekly hours plus extra hours minus time off, joined where adjacent',
    }),
    exceptions: Type.Array(ScheduleException),
    appointments: Type.Array(
      Type.Object({
        ...TimeSpan.properties,
        id: Id,
        status: Type.String(),
        appointmentType: Type.String(),
      }),
      {
        description:
          'Appointments holding time on this day (all but CANCELLED and NO_SHOW), without patient identifiers; GET /api/appointments?providerId=… shows whose they are',
      },
    ),
    freeSlots: Type.Array(TimeSpan, {
      description: 'Slots of the provider’s slot length that are free and not in the past',
    }),
  }),
)
export type ScheduleDay = Static<typeof ScheduleDay>

export const ProviderSchedule = Named(
  'ProviderSchedule',
  Type.Object({
    providerId: Id,
    timeZone: Type.String(),
    slotMinutes: Type.Integer(),
    days: Type.Array(ScheduleDay),
  }),
)
export type ProviderSchedule = Static<typeof ProviderSchedule>

export const ProviderEnvelope = Envelope(Provider)
export const ProviderPageEnvelope = Envelope(Page(Provider))
export const ScheduleExceptionEnvelope = Envelope(ScheduleException)
export const ExceptionDeletedEnvelope = Envelope(Deleted)
export const ProviderScheduleEnvelope = Envelope(ProviderSchedule)
