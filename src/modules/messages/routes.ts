import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import {
  Message,
  MessageEnvelope,
  MessageListQuery,
  MessagePageEnvelope,
  SendMessageBody,
} from '../../../schemas/messages.js'
import { listOrSync } from '../../http/list-or-sync.js'
import { recordRoutes } from '../../http/record-routes.js'
import { errorResponse, recordErrors } from '../../http/responses.js'
import { versionRoutes } from '../../http/version-routes.js'
import { toMessage } from './mapper.js'
import { getMessage, listMessages, readMessage, sendMessage } from './service.js'

const tags = ['Messages']
const notVisible = errorResponse(404, 'No such message among yours (RES_001)', 'MessageNotFound')

const messageRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const messages = recordRoutes(app, { tags, envelope: MessageEnvelope, errors: { 404: notVisible } })

  messages.create({
    operationId: 'sendMessage',
    summary: 'Send a message to a user of your organization',
    body: SendMessageBody,
    response: { 201: MessageEnvelope, ...recordErrors('patient', 'Patient') },
    message: 'Message sent',
    create: sendMessage,
  })

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

  messages.get({
    operationId: 'getMessage',
    summary: 'A message you sent or received',
    message: 'Message retrieved',
    read: getMessage,
  })

  versionRoutes(app, {
    table: 'messages',
    tags,
    name: 'Message',
    noun: 'message',
    schema: Message,
    errors: { 404: notVisible },
    read: getMessage,
    represent: toMessage,
  })

  messages.change('PUT', '/read', {
    operationId: 'markMessageRead',
    summary: 'Mark a message you received as read',
    description:
      'Idempotent: the first read time is kept, and marking a read message again changes nothing (its version stays). With `If-Match`, only if the message is still at that version (412 otherwise). The sender gets 403; anyone else 404.',
    errors: { 403: errorResponse(403, 'You sent this message; only its recipient marks it read (AUTH_003)') },
    message: 'Message marked read',
    change: readMessage,
  })
}

export default messageRoutes
