import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { IdParams, IfMatchHeaders, IfNoneMatchHeaders } from '../../../schemas/common.js'
import {
  CreateWebhookBody,
  DeliveryEnvelope,
  PatchWebhookBody,
  RotateSecretBody,
  UpdateWebhookBody,
  WebhookDeletedEnvelope,
  WebhookEnvelope,
  WebhookListQuery,
  WebhookPageEnvelope,
  WebhookWithSecretEnvelope,
} from '../../../schemas/webhooks.js'
import { ok } from '../../http/envelope.js'
import { listOrSync } from '../../http/list-or-sync.js'
import { validMergedBody } from '../../http/merge-patch-body.js'
import { principalOf } from '../../http/request-principal.js'
import { errorResponse, recordErrors } from '../../http/responses.js'
import { MERGE_PATCH, mergePatchDescription } from '../../plugins/conditional-requests.js'
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
        description:
          'With `updatedSince` or `cursor`, a sync page: webhooks changed since, oldest change first, and tombstones of deleted ones.',
        querystring: WebhookListQuery,
        response: { 200: WebhookPageEnvelope },
      },
    },
    async (request) => listOrSync(request, 'Webhooks retrieved', listWebhooks),
  )

  app.get(
    '/:id',
    {
      schema: {
        tags,
        operationId: 'getWebhook',
        summary: 'One webhook',
        description: 'Carries the ETag `W/"<version>"`; with a current `If-None-Match`, 304 without a body.',
        params: IdParams,
        headers: IfNoneMatchHeaders,
        response: { 200: WebhookEnvelope, ...webhookErrors },
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
        description:
          '`active` left out stays as it is (use PATCH to change some fields only). With `If-Match`, only if the webhook is still at that version (412 otherwise).',
        params: IdParams,
        headers: IfMatchHeaders,
        body: UpdateWebhookBody,
        response: { 200: WebhookEnvelope, ...webhookErrors, 422: refused },
      },
    },
    async (request) =>
      ok(
        'Webhook updated',
        await updateWebhook(
          app.db,
          settings,
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
        operationId: 'patchWebhook',
        summary: 'Change some fields of a webhook (JSON Merge Patch)',
        description: mergePatchDescription(
          '`events` is replaced whole. The merged webhook is checked like a full replacement (422). With `If-Match`, only if the webhook is still at that version (412 otherwise).',
        ),
        consumes: [MERGE_PATCH],
        params: IdParams,
        headers: IfMatchHeaders,
        body: PatchWebhookBody,
        response: { 200: WebhookEnvelope, ...webhookErrors, 422: refused },
      },
    },
    async (request) => {
      const validate = (merged: unknown) => validMergedBody(request, UpdateWebhookBody, merged)
      const webhook = await patchWebhook(
        app.db,
        settings,
        principalOf(request),
        request.params.id,
        request.body,
        request.expectedVersion,
        validate,
      )
      return ok('Webhook updated', webhook)
    },
  )

  app.delete(
    '/:id',
    {
      schema: {
        tags,
        operationId: 'deleteWebhook',
        summary: 'Delete a webhook and its delivery history',
        description:
          'With `If-Match`, only if the webhook is still at that version (412 otherwise). Sync readers of the list see a tombstone.',
        params: IdParams,
        headers: IfMatchHeaders,
        response: { 200: WebhookDeletedEnvelope, ...webhookErrors },
      },
    },
    async (request) =>
      ok(
        'Webhook deleted',
        await deleteWebhook(app.db, principalOf(request), request.params.id, request.expectedVersion),
      ),
  )

  app.post(
    '/:id/rotate-secret',
    {
      schema: {
        tags,
        operationId: 'rotateWebhookSecret',
        summary: 'Replace the signing secret',
        description:
          'Until `previousSecretExpiresAt` every delivery carries two signatures, one per secret, so the receiver can switch at its own pace. With `If-Match`, only if the webhook is still at that version (412 otherwise).',
        params: IdParams,
        headers: IfMatchHeaders,
        body: RotateSecretBody,
        response: { 200: WebhookWithSecretEnvelope, ...webhookErrors },
      },
    },
    async (request) =>
      ok(
        'Secret rotated',
        await rotateSecret(
          app.db,
          settings,
          principalOf(request),
          request.params.id,
          request.body,
          request.expectedVersion,
        ),
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
