import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { IdParams } from '../../../schemas/common.js'
import {
  CreateWebhookBody,
  DeliveryEnvelope,
  PatchWebhookBody,
  RotateSecretBody,
  UpdateWebhookBody,
  Webhook,
  WebhookDeletedEnvelope,
  WebhookEnvelope,
  WebhookListQuery,
  WebhookPageEnvelope,
  WebhookWithSecretEnvelope,
} from '../../../schemas/webhooks.js'
import { ok } from '../../http/envelope.js'
import { listOrSync } from '../../http/list-or-sync.js'
import { recordRoutes } from '../../http/record-routes.js'
import { principalOf } from '../../http/request-principal.js'
import { errorResponse, recordErrors } from '../../http/responses.js'
import { versionRoutes } from '../../http/version-routes.js'
import { MERGE_PATCH, mergePatchDescription } from '../../plugins/conditional-requests.js'
import { toWebhook } from './mapper.js'
import {
  createWebhook,
  deleteWebhook,
  getWebhook,
  listWebhooks,
  patchWebhook,
  rotateSecret,
  sendTestEvent,
  updateWebhook,
  type WebhookSettings,
} from './service.js'

export const tags = ['Webhooks']
export const webhookErrors = recordErrors('webhook', 'Webhook')
const refused = errorResponse(
  422,
  'The body failed validation, or the url is not https or resolves to an internal address (VAL_001, VAL_002)',
  'WebhookTargetRefused',
)
const inactive = errorResponse(409, 'The webhook is inactive (RES_002)')

const webhookRoutes: FastifyPluginAsyncTypebox<{ settings: WebhookSettings }> = async (app, { settings }) => {
  const webhooks = recordRoutes(app, { tags, envelope: WebhookEnvelope, errors: webhookErrors })

  webhooks.create({
    operationId: 'createWebhook',
    summary: 'Register a webhook',
    description:
      'The secret is returned only when the service generated it, in this response. Deliveries are signed per Standard Webhooks; see the API description.',
    body: CreateWebhookBody,
    response: { 201: WebhookWithSecretEnvelope, 422: refused },
    message: 'Webhook created',
    create: (db, actor, body) => createWebhook(db, settings, actor, body),
  })

  app.get(
    '',
    {
      schema: {
        tags,
        operationId: 'listWebhooks',
        summary: 'List the organization’s webhooks',
        description:
          'With `updatedSince` or `cursor`, a sync page: webhooks changed since, oldest change first, and tombstones of deleted ones.',
        querystring: WebhookListQuery,
        response: { 200: WebhookPageEnvelope },
      },
    },
    async (request) => listOrSync(request, 'Webhooks retrieved', listWebhooks),
  )

  webhooks.get({
    operationId: 'getWebhook',
    summary: 'One webhook',
    message: 'Webhook retrieved',
    read: getWebhook,
  })

  versionRoutes(app, {
    table: 'webhooks',
    tags,
    name: 'Webhook',
    noun: 'webhook',
    schema: Webhook,
    errors: webhookErrors,
    read: getWebhook,
    represent: toWebhook,
  })

  webhooks.putAndPatch({
    errors: { 422: refused },
    message: 'Webhook updated',
    put: {
      operationId: 'updateWebhook',
      summary: 'Change a webhook’s url, events or active flag',
      description:
        '`active` left out stays as it is (use PATCH to change some fields only). With `If-Match`, only if the webhook is still at that version (412 otherwise).',
      body: UpdateWebhookBody,
      replace: (db, actor, id, body, expected) => updateWebhook(db, settings, actor, id, body, expected),
    },
    patch: {
      operationId: 'patchWebhook',
      summary: 'Change some fields of a webhook (JSON Merge Patch)',
      description: mergePatchDescription(
        '`events` is replaced whole. The merged webhook is checked like a full replacement (422). With `If-Match`, only if the webhook is still at that version (412 otherwise).',
      ),
      consumes: [MERGE_PATCH],
      body: PatchWebhookBody,
      patch: (db, actor, id, patch, expected, validate) =>
        patchWebhook(db, settings, actor, id, patch, expected, validate),
    },
  })

  webhooks.change('DELETE', '', {
    operationId: 'deleteWebhook',
    summary: 'Delete a webhook and its delivery history',
    description:
      'With `If-Match`, only if the webhook is still at that version (412 otherwise). Sync readers of the list see a tombstone.',
    answer: WebhookDeletedEnvelope,
    message: 'Webhook deleted',
    change: deleteWebhook,
  })

  webhooks.changeWithBody('POST', '/rotate-secret', {
    operationId: 'rotateWebhookSecret',
    summary: 'Replace the signing secret',
    description:
      'Until `previousSecretExpiresAt` every delivery carries two signatures, one per secret, so the receiver can switch at its own pace. With `If-Match`, only if the webhook is still at that version (412 otherwise).',
    body: RotateSecretBody,
    answer: WebhookWithSecretEnvelope,
    message: 'Secret rotated',
    change: (db, actor, id, body, expected) => rotateSecret(db, settings, actor, id, body, expected),
  })

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
        response: { 201: DeliveryEnvelope, ...webhookErrors, 409: inactive },
      },
    },
    async (request, reply) => {
      const delivery = await sendTestEvent(app.db, principalOf(request), request.params.id)
      return reply.code(201).send(ok('Test event queued', delivery))
    },
  )
}

export default webhookRoutes
