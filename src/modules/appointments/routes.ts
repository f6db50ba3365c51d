import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import {
  AppointmentEnvelope,
  AppointmentListQuery,
  AppointmentPageEnvelope,
  AvailableSlotsEnvelope,
  AvailableSlotsQuery,
  CancelAppointmentBody,
  CreateAppointmentBody,
  UpdateAppointmentBody,
} from '../../../schemas/appointments.js'
import { IdParams } from '../../../schemas/common.js'
import { ok } from '../../http/envelope.js'
import { principalOf } from '../../http/principal.js'
import { errorResponse } from '../../http/responses.js'
import { availableSlots } from './schedule.js'
import {
  cancelAppointment,
  createAppointment,
  getAppointment,
  listAppointments,
  updateAppointment,
} from './service.js'

const tags = ['Appointments']
const notFound = errorResponse(404, 'No such appointment, or no such patient or provider (RES_001)')
const otherOrganization = errorResponse(
  403,
  'Missing role, or the appointment, patient or provider belongs to another organization (AUTH_003)',
)
const conflictOnBooking = errorResponse(
  409,
  'The provider already has an appointment overlapping this time, the provider is inactive, or the status does not allow the change (RES_002)',
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
          'Default sort appointmentDate,asc (by start instant); dateFrom/dateTo compare appointmentDate.',
        querystring: AppointmentListQuery,
        response: { 200: AppointmentPageEnvelope },
      },
    },
    async (request) => {
      const page = await listAppointments(app.db, principalOf(request), request.query)
      request.auditedIds = page.content.map((appointment) => appointment.id)
      return ok('Appointments retrieved', page)
    },
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
          403: errorResponse(403, 'Missing role, or the provider belongs to another organization (AUTH_003)'),
          404: errorResponse(404, 'No such provider (RES_001)'),
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
        params: IdParams,
        response: { 200: AppointmentEnvelope, 403: otherOrganization, 404: notFound },
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
        response: { 201: AppointmentEnvelope, 403: otherOrganization, 404: notFound, 409: conflictOnBooking },
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
        description: 'Emits appointment.updated.',
        params: IdParams,
        body: UpdateAppointmentBody,
        response: { 200: AppointmentEnvelope, 403: otherOrganization, 404: notFound, 409: conflictOnBooking },
      },
    },
    async (request) =>
      ok(
        'Appointment updated',
        await updateAppointment(app.db, principalOf(request), request.params.id, request.body),
      ),
  )

  app.post(
    '/:id/cancel',
    {
      // Both fields are optional, so a request without any body is a cancellation without reason.
      preValidation: async (request) => {
        request.body ??= {}
      },
      schema: {
        tags,
        operationId: 'cancelAppointment',
        summary: 'Cancel an appointment',
        description: 'Emits appointment.cancelled.',
        params: IdParams,
        body: CancelAppointmentBody,
        response: {
          200: AppointmentEnvelope,
          403: otherOrganization,
          404: errorResponse(404, 'No such appointment (RES_001)'),
          409: errorResponse(409, 'The appointment is not SCHEDULED or CONFIRMED (RES_002)'),
        },
      },
    },
    async (request) =>
      ok(
        'Appointment cancelled',
        await cancelAppointment(app.db, principalOf(request), request.params.id, request.body),
      ),
  )
}

export default appointmentRoutes
