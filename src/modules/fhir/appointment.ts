import type { Appointment, CodeableConcept, Coding } from '@medplum/fhirtypes'
import type { Db } from '../../../db/database.js'
import type { AppointmentRow } from '../../../db/tables/appointments.js'
import type { AppointmentStatus } from '../../../schemas/appointments.js'
import { AppError } from '../../errors.js'
import { requireAppointment } from '../appointments/service.js'
import type { FhirResourceType, ReadScope } from './resource-type.js'
import {
  countMatches,
  dateCondition,
  inCompartment,
  keysetPage,
  present,
  referenceParameter,
  type SearchColumns,
  sortParameters,
  tokenValues,
  whereCommon,
  whereOneOf,
  whereReferences,
} from './search-conditions.js'
import { occurrences, type SearchQuery } from './search-params.js'

const COLUMNS: SearchColumns = { id: 'id', updatedAt: 'updated_at', sortDates: { date: 'starts_at' } }

/**
 * The service's own code system for its visit types (OFFICE_VISIT, TELEHEALTH, …), which no
 * standard code system matches one to one. A fixed URN rather than an http URL: the service owns
 * no domain it could name a canonical under.
 */
export const VISIT_TYPE_SYSTEM = 'urn:uuid:8c323408-a2f2-40c0-9db9-dcf57f90a31d'

const VISIT_TYPE_TEXT: Record<string, string> = {
  OFFICE_VISIT: 'Office visit',
  NEW_PATIENT: 'New patient visit',
  FOLLOW_UP: 'Follow-up visit',
  TELEHEALTH: 'Telehealth visit',
  ANNUAL_PHYSICAL: 'Annual physical',
  CONSULTATION: 'Consultation',
  PROCEDURE: 'Procedure',
}

/** Our visit type as a CodeableConcept of the service's code system, with `extra` standard codings first. */
export function visitType(type: string, extra: Coding[] = []): CodeableConcept {
  const display = VISIT_TYPE_TEXT[type] ?? type
  return { coding: [...extra, { system: VISIT_TYPE_SYSTEM, code: type, display }], text: display }
}

const APPOINTMENT_REASON_SYSTEM = 'http://terminology.hl7.org/CodeSystem/v2-0276'

// HL7 v2 table 0276 (the preferred binding of Appointment.appointmentType), where a code says the same.
const APPOINTMENT_REASONS: Record<string, Coding> = {
  OFFICE_VISIT: { system: APPOINTMENT_REASON_SYSTEM, code: 'ROUTINE', display: 'Routine appointment' },
  FOLLOW_UP: { system: APPOINTMENT_REASON_SYSTEM, code: 'FOLLOWUP', display: 'A follow up visit' },
  ANNUAL_PHYSICAL: { system: APPOINTMENT_REASON_SYSTEM, code: 'CHECKUP', display: 'A routine check-up' },
}

const APPOINTMENT_STATUS_SYSTEM = 'http://hl7.org/fhir/appointmentstatus'

/**
 * Our lifecycle in FHIR's appointment status codes. FHIR has no "confirmed": a SCHEDULED
 * appointment is already booked on the provider's calendar, so both are `booked`, and the
 * patient's participant status tells them apart (needs-action vs accepted). IN_PROGRESS is
 * `checked-in`: the Appointment's own lifecycle ends at check-in, the visit under way is the
 * Encounter's (in-progress).
 */
const STATUSES: Record<AppointmentStatus, NonNullable<Appointment['status']>> = {
  SCHEDULED: 'booked',
  CONFIRMED: 'booked',
  CHECKED_IN: 'checked-in',
  IN_PROGRESS: 'checked-in',
  COMPLETED: 'fulfilled',
  CANCELLED: 'cancelled',
  NO_SHOW: 'noshow',
}

/** Ours for each FHIR code (one code may stand for several of ours). */
const STATUSES_OF_CODE = Object.entries(STATUSES).reduce<Record<string, string[]>>((byCode, [ours, code]) => {
  byCode[code] = [...(byCode[code] ?? []), ours]
  return byCode
}, {})

/** An appointment row as FHIR R4 Appointment; empty parts are left out, as FHIR requires. */
function toFhirAppointment(row: AppointmentRow): Appointment & { id: string } {
  return present({
    resourceType: 'Appointment' as const,
    id: String(row.id),
    meta: { versionId: String(row.version), lastUpdated: row.updated_at.toISOString() },
    status: STATUSES[row.status as AppointmentStatus] ?? 'booked',
    cancelationReason: row.cancellation_reason ? { text: row.cancellation_reason } : undefined,
    appointmentType: visitType(
      row.appointment_type,
      APPOINTMENT_REASONS[row.appointment_type] ? [APPOINTMENT_REASONS[row.appointment_type] as Coding] : [],
    ),
    reasonCode: row.reason ? [{ text: row.reason }] : undefined,
    start: row.starts_at.toISOString(),
    end: row.ends_at.toISOString(),
    minutesDuration: row.duration_minutes,
    created: row.created_at.toISOString(),
    participant: [
      {
        actor: { reference: `Patient/${row.patient_id}` },
        required: 'required' as const,
        status: row.status === 'SCHEDULED' ? ('needs-action' as const) : ('accepted' as const),
      },
      {
        actor: { reference: `Practitioner/${row.provider_id}` },
        required: 'required' as const,
        status: 'accepted' as const,
      },
    ],
  }) as Appointment & { id: string }
}

type AppointmentQuery = ReturnType<typeof appointmentsOf>

const appointmentsOf = (db: Db, scope: ReadScope) => {
  const query = db
    .selectFrom('appointments')
    .selectAll()
    .where('organization_id', '=', scope.actor.organizationId)
  return inCompartment(query, scope, 'patient_id')
}

function filtered(query: AppointmentQuery, search: SearchQuery): AppointmentQuery {
  let result = whereCommon(query, search, COLUMNS)
  result = whereReferences(result, search, 'patient', 'Patient', 'patient_id')
  result = whereReferences(result, search, 'practitioner', 'Practitioner', 'provider_id')
  for (const values of occurrences(search, 'status')) {
    const ours = tokenValues(values, APPOINTMENT_STATUS_SYSTEM).flatMap(
      (code) => STATUSES_OF_CODE[code] ?? [],
    )
    result = whereOneOf(result, 'status', ours)
  }
  for (const values of occurrences(search, 'date')) {
    result = result.where((eb) =>
      eb.or(values.map((value) => dateCondition(eb, 'starts_at', value, 'instant'))),
    )
  }
  return result
}

/** Appointment: the organization's appointments, every status (none is ever removed). */
export function appointmentResource(): FhirResourceType<Appointment> {
  return {
    type: 'Appointment',
    restRead: 'GET /api/appointments/:id',
    restSearch: 'GET /api/appointments',
    sortParameters: sortParameters(COLUMNS),
    searchParameters: [
      referenceParameter('patient', 'Patient'),
      referenceParameter('practitioner', 'Practitioner'),
      {
        name: 'date',
        type: 'date',
        documentation: 'When the appointment starts (prefixes eq, ne, gt, lt, ge, le)',
      },
      {
        name: 'status',
        type: 'token',
        documentation:
          'booked (SCHEDULED, CONFIRMED) | checked-in (CHECKED_IN, IN_PROGRESS) | fulfilled | cancelled | noshow',
      },
    ],
    includes: {
      patient: (appointment) => referencesTo(appointment, 'Patient/'),
      practitioner: (appointment) => referencesTo(appointment, 'Practitioner/'),
    },
    async read(db, scope, id) {
      const row = await requireAppointment(db, scope.actor, id)
      if (scope.patient !== undefined && row.patient_id !== scope.patient) {
        throw new AppError('AUTH_003', 'The token is limited to another patient’s records')
      }
      return toFhirAppointment(row)
    },
    search: (db, scope, query, page) =>
      keysetPage(filtered(appointmentsOf(db, scope), query), COLUMNS, page, toFhirAppointment),
    count: (db, scope, query) => countMatches(filtered(appointmentsOf(db, scope), query)),
  }
}

const referencesTo = (appointment: Appointment, prefix: string): string[] =>
  (appointment.participant ?? [])
    .map((participant) => participant.actor?.reference)
    .filter((reference): reference is string => reference?.startsWith(prefix) === true)
