import type { Appointment, CodeableConcept, Coding } from '@medplum/fhirtypes'
import type { AppointmentRow } from '../../../db/tables/appointments.js'
import type { AppointmentStatus } from '../../../schemas/appointments.js'
import { requireAppointment } from '../appointments/service.js'
import { appointmentWrites } from './appointment-writes.js'
import { keptVersions } from './kept-versions.js'
import { defineResourceType } from './resource-definition.js'
import { recordResource, reference, referencesTo } from './resource-elements.js'
import type { FhirResourceType } from './resource-type.js'
import { checkLaunchPatient } from './scopes.js'
import { dateParameter, inverse, referenceParameter, tokenParameter } from './search-conditions.js'

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

/** The visit type an appointmentType codes: its code in the service's system, else its HL7 v2 code's. */
function visitTypeOf(concept: CodeableConcept | undefined): string | undefined {
  const codings = concept?.coding ?? []
  const ours = codings.find((coding) => coding.system === VISIT_TYPE_SYSTEM)?.code
  if (ours !== undefined) return ours
  return Object.entries(APPOINTMENT_REASONS).find(([, standard]) =>
    codings.some((coding) => coding.system === standard.system && coding.code === standard.code),
  )?.[0]
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

const STATUSES_OF_CODE = inverse(STATUSES)

/** An appointment row as FHIR R4 Appointment; empty parts are left out, as FHIR requires. */
function toFhirAppointment(row: AppointmentRow): Appointment & { id: string } {
  return recordResource('Appointment', row, {
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
        actor: reference('Patient', row.patient_id),
        required: 'required',
        status: row.status === 'SCHEDULED' ? 'needs-action' : 'accepted',
      },
      {
        actor: reference('Practitioner', row.provider_id),
        required: 'required',
        status: 'accepted',
      },
    ],
  })
}

/** Appointment: the organization's appointments, every status (none is ever removed). */
export function appointmentResource(): FhirResourceType<Appointment> {
  return defineResourceType({
    type: 'Appointment',
    restRead: 'GET /api/appointments/:id',
    restSearch: 'GET /api/appointments',
    records: (db, scope) =>
      db.selectFrom('appointments').selectAll().where('organization_id', '=', scope.actor.organizationId),
    patientColumn: 'patient_id',
    columns: { id: 'id', updatedAt: 'updated_at', sortDates: { date: 'starts_at' } },
    searchParameters: [
      referenceParameter('patient', 'Patient', 'patient_id'),
      referenceParameter('practitioner', 'Practitioner', 'provider_id'),
      dateParameter('date', 'When the appointment starts', 'starts_at', 'instant'),
      tokenParameter(
        'status',
        'booked (SCHEDULED, CONFIRMED) | checked-in (CHECKED_IN, IN_PROGRESS) | fulfilled | cancelled | noshow',
        'status',
        { system: APPOINTMENT_STATUS_SYSTEM, ours: STATUSES_OF_CODE },
      ),
    ],
    includes: {
      patient: (appointment) => referencesTo('Patient', actorsOf(appointment)),
      practitioner: (appointment) => referencesTo('Practitioner', actorsOf(appointment)),
    },
    toFhir: toFhirAppointment,
    versions: keptVersions('appointments', toFhirAppointment, { patientColumn: 'patient_id' }),
    writes: appointmentWrites(toFhirAppointment, visitTypeOf),
    async read(db, scope, id) {
      const row = await requireAppointment(db, scope.actor, id)
      checkLaunchPatient(scope, row.patient_id)
      return toFhirAppointment(row)
    },
  })
}

const actorsOf = (appointment: Appointment) =>
  appointment.participant?.map((participant) => participant.actor)
