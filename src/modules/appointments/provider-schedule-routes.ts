import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { IdParams } from '../../../schemas/common.js'
import { ProviderScheduleEnvelope, ScheduleQuery } from '../../../schemas/providers.js'
import { ok } from '../../http/envelope.js'
import { principalOf } from '../../http/request-principal.js'
import { recordErrors } from '../../http/responses.js'
import { providerSchedule } from './schedule.js'

const tags = ['Providers']

/**
 * A provider's schedule day by day: the provider's working time with the appointments that hold
 * it, so it is served here, by the area that knows both, under the provider's path.
 */
const providerScheduleViewRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/:id/schedule',
    {
      schema: {
        tags,
        operationId: 'getProviderSchedule',
        summary: 'The provider’s schedule, day by day',
        description:
          'For each date from startDate to endDate (at most 31 days; a longer or reversed range is 400): working hours, exceptions, appointments holding time (without patient identifiers) and free slots of the provider’s slot length, all in the provider’s time zone.',
        params: IdParams,
        querystring: ScheduleQuery,
        response: { 200: ProviderScheduleEnvelope, ...recordErrors('provider', 'Provider') },
      },
    },
    async (request) =>
      ok(
        'Schedule retrieved',
        await providerSchedule(app.db, principalOf(request), request.params.id, request.query),
      ),
  )
}

export default providerScheduleViewRoutes
