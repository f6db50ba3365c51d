import { type Static, Type } from '@sinclair/typebox'
import {
  Envelope,
  Id,
  ListQuery,
  Named,
  Nullable,
  Page,
  StringEnum,
  Text,
  Timestamp,
  Version,
} from './common.js'

export const SendMessageBody = Named(
  'MessageCreate',
  Type.Object(
    {
      recipientId: Type.Integer({ minimum: 1, description: 'A user of your organization' }),
      subject: Text(200),
      body: Type.String({ minLength: 1, maxLength: 10_000, pattern: '\\S' }),
      patientId: Type.Optional(Type.Integer({ minimum: 1, description: 'The patient the message is about' })),
      replyToId: Type.Optional(Type.Integer({ minimum: 1, description: 'A message you sent or received' })),
    },
    {
      additionalProperties: false,
      examples: [
        { recipientId: 12, subject: 'Lab results', body: 'Please review the glucose result.', patientId: 42 },
      ],
    },
  ),
)
export type SendMessageBody = Static<typeof SendMessageBody>

export const Message = Named(
  'Message',
  Type.Object({
    id: Id,
    senderId: Id,
    recipientId: Id,
    patientId: Nullable(Id),
    threadId: Id,
    replyToId: Nullable(Id),
    subject: Type.String(),
    body: Type.String(),
    readAt: Nullable(Timestamp),
    createdAt: Timestamp,
    updatedAt: Timestamp,
    version: Version,
  }),
)
export type Message = Static<typeof Message>

export const MessageEnvelope = Envelope(Message)
export const MessagePageEnvelope = Envelope(Page(Message))

export const MessageListQuery = ListQuery(['createdAt'], {
  folder: StringEnum(['inbox', 'sent'], {
    default: 'inbox',
    description: 'inbox: messages to you; sent: messages from you',
  }),
  unread: Type.Optional(Type.Boolean({ description: 'Only unread messages (inbox)' })),
  patientId: Type.Optional(Type.Integer({ minimum: 1 })),
})
export type MessageListQuery = Static<typeof MessageListQuery>
