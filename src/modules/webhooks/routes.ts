import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { IdParams } from '../../../schemas/common.js'
import {
  CreateWebhookBody,
  DeliveryEnvelope,
  RotateSecretBody,
  UpdateWebhookBody,
  WebhookDeletedEnvelope,
  WebhookEnvelope,
  WebhookListQuery,
  WebhookPageEnvelope,
  WebhookWithSecretEnvelope,
} from '../../../schemas/webhooks.js'
import { ok } from '../../http/envelope.js'
import { principalOf } from '../../http/principal.js'
import { errorResponse } from '../../http/responses.js'
import {
  createWebhook,
  deleteWebhook,
  getWebhook,
  listWebhooks,
  rotateSecret,
  sendTestEvent,
  updateWebhook,
  type WebhookSettings,
} from './service.js'

export const tags = ['Webhooks']
export const webhookNotFound = errorResponse(404, 'No such webhook (RES_001)')
export const otherOrganization = errorResponse(
  403,
  'Missing role, or the webhook belongs to another organization (AUTH_003)',
)
const refused = errorResponse(
  422,
  'The body failed validation, or the url is not https or resolves to an internal address (VAL_001, VAL_002)',
)
const inactive = errorResponse(409, 'The webhook is inactive (RES_002)')

const webhookRoutes: FastifyPluginAsyncTypebox<{ settings: WebhookSettings }> = async (app, { settings }) => {
  app.post(
    '',
    {
      schema: {
        tags,
        operationId: 'createWebhook',
        summary: 'Register a webhook',
        description:
          'The secret is returned only when the service generated it, in this response. Deliveries are signed per Standard Webhooks; see the API description.',
        body: CreateWebhookBody,
        response: { 201: WebhookWithSecretEnvelope, 422: refused },
      },
    },
    async (request, reply) => {
      const webhook = await createWebhook(app.db, settings, principalOf(request), request.body)
      request.auditedIds = [webhook.id]
      return reply.code(201).send(ok('Webhook created', webhook))
    },
  )

  app.get(
    '',
    {
      schema: {
        tags,
        operationId: 'listWebhooks',
        summary: 'List the organization’s webhooks',
        querystring: WebhookListQuery,
        response: { 200: WebhookPageEnvelope },
      },
    },
    async (request) => {
      const page = await listWebhooks(app.db, principalOf(request), request.query)
      request.auditedIds = page.content.map((webhook) => webhook.id)
      return ok('Webhooks retrieved', page)
    },
  )

  app.get(
    '/:id',
    {
      schema: {
        tags,
        operationId: 'getWebhook',
        summary: 'One webhook',
        params: IdParams,
        response: { 200: WebhookEnvelope, 403: otherOrganization, 404: webhookNotFound },
      },
    },
    async (request) =>
      ok('Webhook retrieved', await getWebhook(app.db, principalOf(request), request.params.id)),
  )

  app.put(
    '/:id',
    {
      schema: {
        tags,
        operationId: 'updateWebhook',
        summary: 'Change a webhook’s url, events or active flag',
        params: IdParams,
        body: UpdateWebhookBody,
        response: { 200: WebhookEnvelope, 403: otherOrganization, 404: webhookNotFound, 422: refused },
      },
    },
    async (request) =>
      ok(
        'Webhook updated',
        await updateWebhook(app.db, settings, principalOf(request), request.params.id, request.body),
      ),
  )

  app.delete(
    '/:id',
    {
      schema: {
        tags,
        operationId: 'deleteWebhook',
        summary: 'Delete a webhook and its delivery history',
        params: IdParams,
        response: { 200: WebhookDeletedEnvelope, 403: otherOrganization, 404: webhookNotFound },
      },
    },
    async (request) =>
      ok('Webhook deleted', await deleteWebhook(app.db, principalOf(request), request.params.id)),
  )

  app.post(
    '/:id/rotate-secret',
    {
      schema: {
        tags,
        operationId: 'rotateWebhookSecret',
        summary: 'Replace the signing secret',
        description:
          'Until `previousSecretExpiresAt` every delivery carries two signatures, one per secret, so the receiver can switch at its own pace.',
        params: IdParams,
        body: RotateSecretBody,
        response: { 200: WebhookWithSecretEnvelope, 403: otherOrganization, 404: webhookNotFound },
      },
    },
    async (request) =>
      ok(
        'Secret rotated',
        await rotateSecret(app.db, settings, principalOf(request), request.params.id, request.body),
      ),
  )

  app.post(
    '/:id/test',
    {
      schema: {
        tags,
        operationId: 'testWebhook',
        summary: 'Send a test event',
        description:
          'Queues a `webhook.test` event for this webhook only; follow it in the deliveries. It never describes a real change.',
        params: IdParams,
        response: { 201: DeliveryEnvelope, 403: otherOrganization, 404: webhookNotFound, 409: inactive },
      },
    },
    async (request, reply) => {
      const delivery = await sendTestEvent(app.db, principalOf(request), request.params.id)
      return reply.code(201).send(ok('Test event queued', delivery))
    },
  )
}

export default webhookRoutes
