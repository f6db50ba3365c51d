import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import {
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
import { IdParams, IfMatchHeaders, IfNoneMatchHeaders } from '../../../schemas/common.js'
import { ok } from '../../http/envelope.js'
import { listOrSync } from '../../http/list-or-sync.js'
import { validMergedBody } from '../../http/merge-patch-body.js'
import { principalOf } from '../../http/request-principal.js'
import { errorResponse, noSuch, recordErrors } from '../../http/responses.js'
import { MERGE_PATCH, mergePatchDescription } from '../../plugins/conditional-requests.js'
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

  app.get(
    '/:id',
    {
      schema: {
        tags,
        operationId: 'getAppointment',
        summary: 'One appointment',
        description: 'Carries the ETag `W/"<version>"`; with a current `If-None-Match`, 304 without a body.',
        params: IdParams,
        headers: IfNoneMatchHeaders,
        response: { 200: AppointmentEnvelope, ...appointmentErrors },
      },
    },
    async (request) =>
      ok('Appointment retrieved', await getAppointment(app.db, principalOf(request), request.params.id)),
  )

  app.post(
    '',
    {
      schema: {
        tags,
        operationId: 'createAppointment',
        summary: 'Book an appointment',
        description: 'Emits appointment.created.',
        body: CreateAppointmentBody,
        response: { 201: AppointmentEnvelope, ...appointmentErrors, 409: conflictOnBooking },
      },
    },
    async (request, reply) => {
      const appointment = await createAppointment(app.db, principalOf(request), request.body)
      request.auditedIds = [appointment.id]
      return reply.code(201).send(ok('Appointment created', appointment))
    },
  )

  app.put(
    '/:id',
    {
      schema: {
        tags,
        operationId: 'updateAppointment',
        summary: 'Reschedule an appointment or change its status',
        description:
          'With `If-Match`, only if the appointment is still at that version (412 otherwise). Emits appointment.updated.',
        params: IdParams,
        headers: IfMatchHeaders,
        body: UpdateAppointmentBody,
        response: { 200: AppointmentEnvelope, ...appointmentErrors, 409: conflictOnBooking },
      },
    },
    async (request) =>
      ok(
        'Appointment updated',
        await updateAppointment(
          app.db,
          principalOf(request),
          request.params.id,
          request.body,
          request.expectedVersion,
        ),
      ),
  )

  app.patch(
    '/:id',
    {
      schema: {
        tags,
        operationId: 'patchAppointment',
        summary: 'Change some fields of an appointment (JSON Merge Patch)',
        description: mergePatchDescription(
          '`null` removes `reason` or `notes`. The merged appointment is checked like a PUT (422; rescheduling and status rules alike). With `If-Match`, only if the appointment is still at that version (412 otherwise). Emits appointment.updated.',
        ),
        consumes: [MERGE_PATCH],
        params: IdParams,
        headers: IfMatchHeaders,
        body: PatchAppointmentBody,
        response: { 200: AppointmentEnvelope, ...appointmentErrors, 409: conflictOnBooking },
      },
    },
    async (request) => {
      const validate = (merged: unknown) => validMergedBody(request, UpdateAppointmentBody, merged)
      const appointment = await patchAppointment(
        app.db,
        principalOf(request),
        request.params.id,
        request.body,
        request.expectedVersion,
        validate,
      )
      return ok('Appointment updated', appointment)
    },
  )

  app.post(
    '/:id/cancel',
    {
      // Both fields are optional, so a request without any body is a cancellation without reason.
      config: { optionalBody: true },
      schema: {
        tags,
        operationId: 'cancelAppointment',
        summary: 'Cancel an appointment',
        description:
          'With `If-Match`, only if the appointment is still at that version (412 otherwise). Emits appointment.cancelled.',
        params: IdParams,
        headers: IfMatchHeaders,
        body: CancelAppointmentBody,
        response: {
          200: AppointmentEnvelope,
          403: appointmentErrors[403],
          404: noSuch('appointment'),
          409: errorResponse(409, 'The appointment is not SCHEDULED or CONFIRMED (RES_002)'),
        },
      },
    },
    async (request) =>
      ok(
        'Appointment cancelled',
        await cancelAppointment(
          app.db,
          principalOf(request),
          request.params.id,
          request.body,
          request.expectedVersion,
        ),
      ),
  )
}

export default appointmentRoutes
