import { type Static, Type } from '@sinclair/typebox'
import { Envelope, Id, ListQuery, Named, Nullable, Page, StringEnum, Timestamp } from './common.js'

const IdOf = (description: string) => Type.Integer({ minimum: 1, maximum: 2_147_483_647, description })
const TimeBound = (description: string) => Type.String({ format: 'date-time', description })

/** What an audited call did; each `/api` route's action is set in src/access/route-access.ts. */
const AUDIT_ACTIONS = [
  'READ',
  'LIST',
  'SEARCH',
  'CREATE',
  'UPDATE',
  'DELETE',
  'CANCEL',
  'SIGN',
  'AMEND',
  'SIGN_IN',
  'CONSENT',
  'DENY',
  'EXCHANGE',
  'SELECT',
] as const
export type AuditAction = (typeof AUDIT_ACTIONS)[number]

/** The kinds of record an audited call touched. */
const AUDIT_RESOURCES = [
  'patient',
  'document',
  'vital-signs',
  'lab-result',
  'condition',
  'allergy',
  'medication',
  'message',
  'invoice',
  'payment',
  'webhook',
  'appointment',
  'encounter',
  'telehealth-room',
  'audit-event',
  'change-feed',
  'user',
  'client',
  'bulk-export',
  'session',
  'smart-app',
  'app-grant',
  'smart-launch',
] as const
export type AuditResource = (typeof AUDIT_RESOURCES)[number]

const AUDIT_OUTCOMES = ['SUCCESS', 'DENIED', 'NOT_FOUND', 'REJECTED', 'ERROR'] as const

const literals = (values: readonly string[], description: string) => StringEnum(values, { description })

const AuditActionSchema = literals(AUDIT_ACTIONS, 'What the call did')
const AuditResourceSchema = literals(AUDIT_RESOURCES, 'The kind of record the call touched')
const AuditOutcome = literals(
  AUDIT_OUTCOMES,
  'SUCCESS (2xx/3xx), DENIED (401, 403), NOT_FOUND (404), REJECTED (other 4xx), ERROR (5xx)',
)

export const AuditEvent = Named(
  'AuditEvent',
  Type.Object({
    id: Type.Integer({ minimum: 1, description: 'Identifier of the audit record' }),
    occurredAt: Timestamp,
    recordedAt: Type.String({
      format: 'date-time',
      description:
        'When the record was written (records are written in batches); sync pages are ordered by it',
    }),
    userId: Nullable(Id),
    action: AuditActionSchema,
    resourceType: AuditResourceSchema,
    resourceIds: Type.Array(Id, { description: 'Ids of the records returned or changed' }),
    patientId: Nullable(IdOf('The patient named in the call’s path, body or query')),
    outcome: AuditOutcome,
    statusCode: Type.Integer({ minimum: 100, maximum: 599 }),
    requestId: Type.String({ description: 'The X-Request-Id of the call' }),
  }),
)
export type AuditEvent = Static<typeof AuditEvent>

const AUDIT_EVENT_SORT_FIELDS = ['occurredAt'] as const

export const AuditEventListQuery = ListQuery(AUDIT_EVENT_SORT_FIELDS, {
  patientId: Type.Optional(
    IdOf(
      'Calls that named this patient (its record, clinical records, documents, bookings) or returned it in a list',
    ),
  ),
  userId: Type.Optional(IdOf('Calls made by this user')),
  action: Type.Optional(AuditActionSchema),
  resourceType: Type.Optional(AuditResourceSchema),
  outcome: Type.Optional(AuditOutcome),
  from: Type.Optional(TimeBound('Calls at or after this time (ISO 8601)')),
  to: Type.Optional(TimeBound('Calls before this time (ISO 8601)')),
})
export type AuditEventListQuery = Static<typeof AuditEventListQuery>

export const AuditEventPageEnvelope = Envelope(Page(AuditEvent))
