import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { IdParams } from '../../../schemas/common.js'
import {
  DeliveryDetailEnvelope,
  DeliveryEnvelope,
  DeliveryListQuery,
  DeliveryPageEnvelope,
  DeliveryParams,
} from '../../../schemas/webhooks.js'
import { ok } from '../../http/envelope.js'
import { listOrSync } from '../../http/list-or-sync.js'
import { principalOf } from '../../http/request-principal.js'
import { errorResponse, noSuch } from '../../http/responses.js'
import { tags, webhookErrors } from './routes.js'
import { getDelivery, listDeliveries, redeliver } from './service.js'

const deliveryErrors = {
  ...webhookErrors,
  404: noSuch('webhook, or no such delivery of it', 'DeliveryNotFound'),
}

const deliveryRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/:id/deliveries',
    {
      schema: {
        tags,
        operationId: 'listWebhookDeliveries',
        summary: 'Deliveries of a webhook, newest first',
        description:
          'Each with its attempt count, last status code, last error, latency and next attempt. With `updatedSince` or `cursor`, a sync page: deliveries changed since (claimed, attempted, finished or redelivered), oldest change first.',
        params: IdParams,
        querystring: DeliveryListQuery,
        response: { 200: DeliveryPageEnvelope, ...webhookErrors },
      },
    },
    async (request) => {
      const webhookId = request.params.id
      return listOrSync(
        request,
        'Deliveries retrieved',
        (db, actor, query) => listDeliveries(db, actor, webhookId, query),
        { auditIds: false },
      )
    },
  )

  app.get(
    '/:id/deliveries/:deliveryId',
    {
      schema: {
        tags,
        operationId: 'getWebhookDelivery',
        summary: 'One delivery with its body and every attempt',
        params: DeliveryParams,
        response: { 200: DeliveryDetailEnvelope, ...deliveryErrors },
      },
    },
    async (request) =>
      ok(
        'Delivery retrieved',
        await getDelivery(app.db, principalOf(request), request.params.id, request.params.deliveryId),
      ),
  )

  app.post(
    '/:id/deliveries/:deliveryId/redeliver',
    {
      schema: {
        tags,
        operationId: 'redeliverWebhookDelivery',
        summary: 'Send a delivery again',
        description:
          'Due at once, with the same `webhook-id` (receivers that already processed it skip it) and a fresh retry schedule.',
        params: DeliveryParams,
        response: {
          200: DeliveryEnvelope,
          ...deliveryErrors,
          409: errorResponse(
            409,
            'The webhook is inactive, or the delivery is being sent right now (RES_002)',
          ),
        },
      },
    },
    async (request) =>
      ok(
        'Delivery queued again',
        await redeliver(app.db, principalOf(request), request.params.id, request.params.deliveryId),
      ),
  )
}

export default deliveryRoutes
