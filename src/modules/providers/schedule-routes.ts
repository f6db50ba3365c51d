import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { IdParams, IfMatchHeaders } from '../../../schemas/common.js'
import {
  ExceptionBody,
  ExceptionDeletedEnvelope,
  ExceptionParams,
  ProviderEnvelope,
  ScheduleExceptionEnvelope,
  WeeklyHoursBody,
} from '../../../schemas/providers.js'
import { ok } from '../../http/envelope.js'
import { recordRoutes } from '../../http/record-routes.js'
import { principalOf } from '../../http/request-principal.js'
import { errorResponse } from '../../http/responses.js'
import { providerErrors, tags } from './route-schemas.js'
import { addException, removeException, replaceWeeklyHours } from './service.js'

/** A provider's working time: weekly hours and dated exceptions. */
const providerScheduleRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const providers = recordRoutes(app, { tags, envelope: ProviderEnvelope, errors: providerErrors })

  providers.changeWithBody('PUT', '/hours', {
    operationId: 'replaceProviderHours',
    summary: 'Replace the provider’s weekly working hours',
    description:
      'A change of the provider: its version rises. With `If-Match`, only if the provider is still at that version (412 otherwise).',
    body: WeeklyHoursBody,
    message: 'Working hours replaced',
    change: replaceWeeklyHours,
  })

  app.post(
    '/:id/exceptions',
    {
      schema: {
        tags,
        operationId: 'addProviderException',
        summary: 'Add time off or extra hours on a date',
        description:
          'A change of the provider: its version rises (read it again for its new ETag). With `If-Match`, only if the provider is still at that version (412 otherwise).',
        params: IdParams,
        headers: IfMatchHeaders,
        body: ExceptionBody,
        response: { 201: ScheduleExceptionEnvelope, ...providerErrors },
      },
    },
    async (request, reply) =>
      reply
        .code(201)
        .send(
          ok(
            'Exception added',
            await addException(
              app.db,
              principalOf(request),
              request.params.id,
              request.body,
              request.expectedVersion,
            ),
          ),
        ),
  )

  app.delete(
    '/:id/exceptions/:exceptionId',
    {
      schema: {
        tags,
        operationId: 'removeProviderException',
        summary: 'Remove a dated exception',
        description:
          'A change of the provider: its version rises (read it again for its new ETag). With `If-Match`, only if the provider is still at that version (412 otherwise).',
        params: ExceptionParams,
        headers: IfMatchHeaders,
        response: {
          200: ExceptionDeletedEnvelope,
          403: providerErrors[403],
          404: errorResponse(404, 'No such provider, or no such exception of the provider (RES_001)'),
        },
      },
    },
    async (request) =>
      ok(
        'Exception removed',
        await removeException(
          app.db,
          principalOf(request),
          request.params.id,
          request.params.exceptionId,
          request.expectedVersion,
        ),
      ),
  )
}

export default providerScheduleRoutes
