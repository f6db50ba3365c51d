import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import {
  Appointment,
  AppointmentEnvelope,
  AppointmentListQuery,
  AppointmentPageEnvelope,
  AvailableSlotsEnvelope,
  AvailableSlotsQuery,
  CancelAppointmentBody,
  CreateAppointmentBody,
  PatchAppointmentBody,
  UpdateAppointmentBody,
} from '../../../schemas/appointments.js'
import { ok } from '../../http/envelope.js'
import { listOrSync } from '../../http/list-or-sync.js'
import { recordRoutes } from '../../http/record-routes.js'
import { principalOf } from '../../http/request-principal.js'
import { errorResponse, noSuch, recordErrors } from '../../http/responses.js'
import { versionRoutes } from '../../http/version-routes.js'
import { MERGE_PATCH, mergePatchDescription } from '../../plugins/conditional-requests.js'
import { toAppointment } from './mapper.js'
import { availableSlots } from './schedule.js'
import {
  cancelAppointment,
  createAppointment,
  getAppointment,
  listAppointments,
  patchAppointment,
  updateAppointment,
} from './service.js'

const tags = ['Appointments']
const appointmentErrors = recordErrors(
  'appointment, patient or provider',
  'Appointment',
  'appointment, or no such patient or provider',
)
const conflictOnBooking = errorResponse(
  409,
  'The provider already has an appointment overlapping this time, the provider is inactive, or the status does not allow the change (RES_002)',
  'AppointmentConflict',
)

const appointmentRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '',
    {
      schema: {
        tags,
        operationId: 'listAppointments',
        summary: 'List appointments of the caller’s organization',
        description:
          'Default sort appointmentDate,asc (by start instant); dateFrom/dateTo compare appointmentDate. With `updatedSince` or `cursor`, a sync page: appointments changed since, oldest change first (appointments are never removed, so there are no tombstones; a cancellation is a change).',
        querystring: AppointmentListQuery,
        response: { 200: AppointmentPageEnvelope },
      },
    },
    async (request) => listOrSync(request, 'Appointments retrieved', listAppointments),
  )

  app.get(
    '/available-slots',
    {
      schema: {
        tags,
        operationId: 'listAvailableSlots',
        summary: 'A provider’s slots on a date, free or taken',
        querystring: AvailableSlotsQuery,
        response: {
          200: AvailableSlotsEnvelope,
          ...recordErrors('provider', 'Provider'),
        },
      },
    },
    async (request) =>
      ok('Slots retrieved', await availableSlots(app.db, principalOf(request), request.query)),
  )

  const appointments = recordRoutes(app, { tags, envelope: AppointmentEnvelope, errors: appointmentErrors })

  appointments.get({
    operationId: 'getAppointment',
    summary: 'One appointment',
    message: 'Appointment retrieved',
    read: getAppointment,
  })

  versionRoutes(app, {
    table: 'appointments',
    tags,
    name: 'Appointment',
    noun: 'appointment',
    schema: Appointment,
    errors: appointmentErrors,
    read: getAppointment,
    represent: toAppointment,
  })

  appointments.create({
    operationId: 'createAppointment',
    summary: 'Book an appointment',
    description: 'Emits appointment.created.',
    body: CreateAppointmentBody,
    response: { 201: AppointmentEnvelope, ...appointmentErrors, 409: conflictOnBooking },
    message: 'Appointment created',
    create: createAppointment,
  })

  appointments.putAndPatch({
    errors: { 409: conflictOnBooking },
    message: 'Appointment updated',
    put: {
      operationId: 'updateAppointment',
      summary: 'Reschedule an appointment or change its status',
      description:
        'With `If-Match`, only if the appointment is still at that version (412 otherwise). Emits appointment.updated.',
      body: UpdateAppointmentBody,
      replace: updateAppointment,
    },
    patch: {
      operationId: 'patchAppointment',
      summary: 'Change some fields of an appointment (JSON Merge Patch)',
      description: mergePatchDescription(
        '`null` removes `reason` or `notes`. The merged appointment is checked like a PUT (422; rescheduling and status rules alike). With `If-Match`, only if the appointment is still at that version (412 otherwise). Emits appointment.updated.',
      ),
      consumes: [MERGE_PATCH],
      body: PatchAppointmentBody,
      patch: patchAppointment,
    },
  })

  appointments.changeWithBody('POST', '/cancel', {
    // Both fields are optional, so a request without any body is a cancellation without reason.
    config: { optionalBody: true },
    operationId: 'cancelAppointment',
    summary: 'Cancel an appointment',
    description:
      'With `If-Match`, only if the appointment is still at that version (412 otherwise). Emits appointment.cancelled.',
    body: CancelAppointmentBody,
    errors: {
      404: noSuch('appointment'),
      409: errorResponse(409, 'The appointment is not SCHEDULED or CONFIRMED (RES_002)'),
    },
    message: 'Appointment cancelled',
    change: cancelAppointment,
  })
}

export default appointmentRoutes
