import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { IdParams, IfMatchHeaders, IfNoneMatchHeaders } from '../../../schemas/common.js'
import {
  MessageEnvelope,
  MessageListQuery,
  MessagePageEnvelope,
  SendMessageBody,
} from '../../../schemas/messages.js'
import { ok } from '../../http/envelope.js'
import { listOrSync } from '../../http/list-or-sync.js'
import { principalOf } from '../../http/request-principal.js'
import { errorResponse, recordErrors } from '../../http/responses.js'
import { getMessage, listMessages, readMessage, sendMessage } from './service.js'

const tags = ['Messages']
const notVisible = errorResponse(404, 'No such message among yours (RES_001)', 'MessageNotFound')

const messageRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    '',
    {
      schema: {
        tags,
        operationId: 'sendMessage',
        summary: 'Send a message to a user of your organization',
        body: SendMessageBody,
        response: {
          201: MessageEnvelope,
          ...recordErrors('patient', 'Patient'),
        },
      },
    },
    async (request, reply) => {
      const message = await sendMessage(app.db, principalOf(request), request.body)
      request.auditedIds = [message.id]
      return reply.code(201).send(ok('Message sent', message))
    },
  )

  app.get(
    '',
    {
      schema: {
        tags,
        operationId: 'listMessages',
        summary: 'Your messages: inbox or sent, newest first',
        description:
          'With `updatedSince` or `cursor`, a sync page: messages sent or read since, oldest change first.',
        querystring: MessageListQuery,
        response: { 200: MessagePageEnvelope },
      },
    },
    async (request) => listOrSync(request, 'Messages retrieved', listMessages),
  )

  app.get(
    '/:id',
    {
      schema: {
        tags,
        operationId: 'getMessage',
        summary: 'A message you sent or received',
        description: 'Carries the ETag `W/"<version>"`; with a current `If-None-Match`, 304 without a body.',
        params: IdParams,
        headers: IfNoneMatchHeaders,
        response: { 200: MessageEnvelope, 404: notVisible },
      },
    },
    async (request) =>
      ok('Message retrieved', await getMessage(app.db, principalOf(request), request.params.id)),
  )

  app.put(
    '/:id/read',
    {
      schema: {
        tags,
        operationId: 'markMessageRead',
        summary: 'Mark a message you received as read',
        description:
          'Idempotent: the first read time is kept, and marking a read message again changes nothing (its version stays). With `If-Match`, only if the message is still at that version (412 otherwise). The sender gets 403; anyone else 404.',
        params: IdParams,
        headers: IfMatchHeaders,
        response: {
          200: MessageEnvelope,
          403: errorResponse(403, 'You sent this message; only its recipient marks it read (AUTH_003)'),
          404: notVisible,
        },
      },
    },
    async (request) =>
      ok(
        'Message marked read',
        await readMessage(app.db, principalOf(request), request.params.id, request.expectedVersion),
      ),
  )
}

export default messageRoutes
