import { type Static, Type } from '@sinclair/typebox'
import {
  Deleted,
  Envelope,
  Id,
  ListQuery,
  MergePatch,
  Named,
  Nullable,
  Page,
  StringEnum,
  Timestamp,
  Version,
} from './common.js'
import { EVENT_NAMES } from './events.js'

const strict = { additionalProperties: false } as const

export const ALL_EVENTS = '*'

const EventFilter = StringEnum([...EVENT_NAMES, ALL_EVENTS], {
  description: 'An event name, or `*` for every event',
})

const WebhookUrl = Type.String({
  format: 'uri',
  maxLength: 2048,
  description:
    'Absolute `https://` address that receives the events. Hosts resolving to loopback, private, link-local, unique-local or metadata addresses are refused, at registration and again before each delivery.',
  examples: ['https://hooks.example.com/ehr'],
})

const Events = Type.Array(EventFilter, {
  minItems: 1,
  maxItems: EVENT_NAMES.length + 1,
  uniqueItems: true,
  description: 'The events to receive; only events of the caller’s organization are ever sent',
  examples: [['patient.created', 'patient.updated']],
})

const SecretInput = Type.String({
  minLength: 16,
  maxLength: 256,
  description:
    'Signing secret. A Standard Webhooks secret (`whsec_` + base64 of 24 to 64 bytes) signs with its decoded bytes; any other string of at least 16 characters signs with its UTF-8 bytes. Omitted, the service generates a `whsec_` secret and returns it once. Stored encrypted; never returned otherwise.',
})

export const CreateWebhookBody = Named(
  'WebhookCreate',
  Type.Object(
    { url: WebhookUrl, events: Events, secret: Type.Optional(SecretInput) },
    {
      ...strict,
      description: 'A webhook registration, as the specification’s `url`, `events`, `secret`',
      examples: [{ url: 'https://hooks.example.com/ehr', events: ['patient.created'] }],
    },
  ),
)
export type CreateWebhookBody = Static<typeof CreateWebhookBody>

export const UpdateWebhookBody = Named(
  'WebhookUpdate',
  Type.Object(
    {
      url: WebhookUrl,
      events: Events,
      active: Type.Optional(
        Type.Boolean({
          description: 'false stops deliveries (pending ones wait); true resumes them. Omitted, unchanged.',
        }),
      ),
    },
    {
      ...strict,
      description: 'Replaces the address and the events; the secret changes only by rotation',
      examples: [{ url: 'https://hooks.example.com/ehr', events: ['*'], active: true }],
    },
  ),
)
export type UpdateWebhookBody = Static<typeof UpdateWebhookBody>

export const PatchWebhookBody = Named(
  'WebhookPatch',
  MergePatch(UpdateWebhookBody, {
    description:
      'A JSON Merge Patch (RFC 7396) of the webhook: only the members sent change (`{"active": false}` pauses it and keeps the url and events); `events` is replaced whole. The merged webhook must pass the same checks as a full replacement (422). Read-only members (`id`, `version`, …) are refused.',
    examples: [{ active: false }, { events: ['patient.created', 'patient.updated'] }],
  }),
)
export type PatchWebhookBody = Static<typeof PatchWebhookBody>

export const RotateSecretBody = Named(
  'WebhookSecretRotation',
  Type.Object(
    { secret: Type.Optional(SecretInput) },
    {
      ...strict,
      description:
        'The new secret, or `{}` to have one generated. The previous secret keeps signing alongside the new one (two signatures in `webhook-signature`) for the overlap period.',
      examples: [{}],
    },
  ),
)
export type RotateSecretBody = Static<typeof RotateSecretBody>

export const Webhook = Named(
  'Webhook',
  Type.Object({
    id: Id,
    url: Type.String(),
    events: Type.Array(EventFilter),
    active: Type.Boolean(),
    deactivatedAt: Nullable(Timestamp),
    deactivationReason: Nullable(
      StringEnum(['MANUAL', 'FAILING'], {
        description:
          'MANUAL: set inactive by an update; FAILING: every attempt failed for the configured period (default 5 days)',
      }),
    ),
    failingSince: Nullable(
      Type.String({
        format: 'date-time',
        description: 'Since when every attempt has failed; null once one succeeds',
      }),
    ),
    previousSecretExpiresAt: Nullable(
      Type.String({
        format: 'date-time',
        description: 'Until when the secret replaced by the last rotation still signs too',
      }),
    ),
    createdAt: Timestamp,
    updatedAt: Timestamp,
    version: Version,
  }),
)
export type Webhook = Static<typeof Webhook>

const GeneratedSecret = Nullable(
  Type.String({
    description:
      'The generated secret (`whsec_…`), shown only in this response; null when the caller chose the secret',
  }),
)

export const WebhookWithSecret = Named(
  'WebhookWithSecret',
  Type.Object({ ...Webhook.properties, secret: GeneratedSecret }),
)
export type WebhookWithSecret = Static<typeof WebhookWithSecret>

export const WEBHOOK_SORT_FIELDS = ['createdAt', 'url'] as const

export const WebhookListQuery = ListQuery(WEBHOOK_SORT_FIELDS, {
  active: Type.Optional(Type.Boolean()),
})
export type WebhookListQuery = Static<typeof WebhookListQuery>

const DeliveryStatus = StringEnum(['PENDING', 'SUCCEEDED', 'FAILED'], {
  description:
    'PENDING: waiting for its first attempt or a retry; SUCCEEDED: a 2xx answer; FAILED: every retry failed (it can be redelivered)',
})

export const Delivery = Named(
  'Delivery',
  Type.Object({
    id: Id,
    webhookId: Id,
    messageId: Type.String({
      description: 'The `webhook-id` header: the same on every attempt and redelivery; deduplicate on it',
    }),
    eventId: Type.Integer({ minimum: 1 }),
    event: Type.String(),
    status: DeliveryStatus,
    attemptCount: Type.Integer({ minimum: 0 }),
    lastAttemptAt: Nullable(Timestamp),
    lastStatusCode: Nullable(Type.Integer({ description: 'HTTP status of the last answer' })),
    lastError: Nullable(
      Type.String({
        description: 'Why the last attempt failed: an HTTP status, a timeout, a refused address',
      }),
    ),
    lastLatencyMs: Nullable(Type.Integer({ minimum: 0 })),
    nextAttemptAt: Nullable(
      Type.String({ format: 'date-time', description: 'When the next attempt is due; null when done' }),
    ),
    completedAt: Nullable(Timestamp),
    createdAt: Timestamp,
  }),
)
export type Delivery = Static<typeof Delivery>

const DeliveryAttempt = Named(
  'DeliveryAttempt',
  Type.Object({
    attemptedAt: Timestamp,
    statusCode: Nullable(Type.Integer()),
    error: Nullable(Type.String()),
    latencyMs: Type.Integer({ minimum: 0 }),
  }),
)

export const DeliveryDetail = Named(
  'DeliveryDetail',
  Type.Object({
    ...Delivery.properties,
    payload: Type.Object(
      {
        event: Type.String(),
        timestamp: Timestamp,
        data: Type.Object({}, { additionalProperties: true }),
      },
      { description: 'The body sent (identifiers only)' },
    ),
    attempts: Type.Array(DeliveryAttempt, { description: 'Every attempt, oldest first' }),
  }),
)
export type DeliveryDetail = Static<typeof DeliveryDetail>

export const DELIVERY_SORT_FIELDS = ['createdAt'] as const

export const DeliveryListQuery = ListQuery(DELIVERY_SORT_FIELDS, {
  status: Type.Optional(DeliveryStatus),
  event: Type.Optional(Type.String({ maxLength: 64 })),
})
export type DeliveryListQuery = Static<typeof DeliveryListQuery>

export const DeliveryParams = Type.Object({ id: Id, deliveryId: Id }, strict)
export type DeliveryParams = Static<typeof DeliveryParams>

export const WebhookEnvelope = Envelope(Webhook)
export const WebhookWithSecretEnvelope = Envelope(WebhookWithSecret)
export const WebhookPageEnvelope = Envelope(Page(Webhook, { tombstones: true }))
export const WebhookDeletedEnvelope = Envelope(Deleted)
export const DeliveryEnvelope = Envelope(Delivery)
export const DeliveryDetailEnvelope = Envelope(DeliveryDetail)
export const DeliveryPageEnvelope = Envelope(Page(Delivery))
