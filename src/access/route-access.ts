import type { AuditAction, AuditResource } from '../../schemas/audit.js'
import type { Role } from './roles.js'

export type { AuditAction, AuditResource }

export interface RouteAccess {
  /** `public`: no token; `authenticated`: any valid token; otherwise at least one of the roles. */
  allow: 'public' | 'authenticated' | readonly Role[]
  /**
   * Routes that touch patient data leave an audit record of who did what to which records; so do
   * webhook routes, since a webhook decides where events about patients are sent.
   */
  audit?: { resourceType: AuditResource; action: AuditAction }
}

const CLINICAL_READERS: readonly Role[] = ['PROVIDER', 'NURSE']
const STAFF: readonly Role[] = ['ADMIN', 'PROVIDER', 'NURSE', 'FRONT_DESK', 'BILLING']
const REGISTRARS: readonly Role[] = ['ADMIN', 'PROVIDER', 'NURSE', 'FRONT_DESK']
const BILLERS: readonly Role[] = ['BILLING', 'ADMIN']
const BILLING_READERS: readonly Role[] = ['BILLING', 'ADMIN', 'PROVIDER']

/** The six routes of a kind of clinical record: PROVIDER and NURSE read, `writers` write. */
function clinicalRecordRoutes(path: string, resourceType: AuditResource, writers: readonly Role[]) {
  const collection = `/api/patients/:patientId/${path}`
  const item = `${collection}/:id`
  return {
    [`POST ${collection}`]: { allow: writers, audit: { resourceType, action: 'CREATE' } },
    [`GET ${collection}`]: { allow: CLINICAL_READERS, audit: { resourceType, action: 'LIST' } },
    [`GET ${item}`]: { allow: CLINICAL_READERS, audit: { resourceType, action: 'READ' } },
    [`PUT ${item}`]: { allow: writers, audit: { resourceType, action: 'UPDATE' } },
    [`PATCH ${item}`]: { allow: writers, audit: { resourceType, action: 'UPDATE' } },
    [`POST ${item}/entered-in-error`]: { allow: writers, audit: { resourceType, action: 'UPDATE' } },
  } satisfies Record<string, RouteAccess>
}
const SCHEDULERS: readonly Role[] = ['ADMIN', 'PROVIDER', 'NURSE']
const CLINICIANS: readonly Role[] = ['PROVIDER']

/**
 * Who may call each `/api` route: the one place access rules live. Every registered `/api` route
 * must appear here (the app refuses to start otherwise); the OpenAPI descriptions and the
 * authorization tests read this table. Organization scoping applies on top of roles: a caller only
 * ever reaches records of their own organization.
 */
export const ROUTE_ACCESS: Record<string, RouteAccess> = {
  'POST /api/auth/login': { allow: 'public' },
  'POST /api/auth/refresh': { allow: 'public' },
  'POST /api/auth/logout': { allow: 'public' },
  'POST /api/auth/idp-login': { allow: 'public' },
  'POST /api/auth/forgot-password': { allow: 'public' },
  'POST /api/auth/reset-password': { allow: 'public' },
  // Public so that a user with a temporary password (who gets no tokens) can change it; the route
  // itself checks a bearer token when one is sent, and the current password always.
  'POST /api/auth/change-password': { allow: 'public' },
  'GET /api/auth/me': { allow: 'authenticated' },

  'GET /api/patients': { allow: CLINICAL_READERS, audit: { resourceType: 'patient', action: 'LIST' } },
  'GET /api/patients/search': {
    allow: CLINICAL_READERS,
    audit: { resourceType: 'patient', action: 'SEARCH' },
  },
  'GET /api/patients/:id': { allow: STAFF, audit: { resourceType: 'patient', action: 'READ' } },
  'POST /api/patients': { allow: REGISTRARS, audit: { resourceType: 'patient', action: 'CREATE' } },
  'PUT /api/patients/:id': { allow: REGISTRARS, audit: { resourceType: 'patient', action: 'UPDATE' } },
  'PATCH /api/patients/:id': { allow: REGISTRARS, audit: { resourceType: 'patient', action: 'UPDATE' } },
  'DELETE /api/patients/:id': { allow: ['ADMIN'], audit: { resourceType: 'patient', action: 'DELETE' } },

  ...clinicalRecordRoutes('vitals', 'vital-signs', ['PROVIDER', 'NURSE']),
  ...clinicalRecordRoutes('lab-results', 'lab-result', ['PROVIDER']),
  ...clinicalRecordRoutes('conditions', 'condition', ['PROVIDER']),
  ...clinicalRecordRoutes('allergies', 'allergy', ['PROVIDER']),
  ...clinicalRecordRoutes('medications', 'medication', ['PROVIDER']),
  'GET /api/patients/:patientId/chart': {
    allow: CLINICAL_READERS,
    audit: { resourceType: 'patient', action: 'READ' },
  },

  'POST /api/telehealth/rooms': {
    allow: REGISTRARS,
    audit: { resourceType: 'telehealth-room', action: 'CREATE' },
  },
  'GET /api/telehealth/rooms/:id': {
    allow: REGISTRARS,
    audit: { resourceType: 'telehealth-room', action: 'READ' },
  },
  'POST /api/telehealth/rooms/:id/close': {
    allow: ['ADMIN', 'PROVIDER', 'NURSE'],
    audit: { resourceType: 'telehealth-room', action: 'UPDATE' },
  },
  'POST /api/telehealth/jitsi/join': {
    allow: REGISTRARS,
    audit: { resourceType: 'telehealth-room', action: 'READ' },
  },

  'POST /api/messages': { allow: STAFF, audit: { resourceType: 'message', action: 'CREATE' } },
  'GET /api/messages': { allow: STAFF, audit: { resourceType: 'message', action: 'LIST' } },
  'GET /api/messages/:id': { allow: STAFF, audit: { resourceType: 'message', action: 'READ' } },
  'PUT /api/messages/:id/read': { allow: STAFF, audit: { resourceType: 'message', action: 'UPDATE' } },

  'POST /api/billing/invoices': { allow: BILLERS, audit: { resourceType: 'invoice', action: 'CREATE' } },
  'GET /api/billing/invoices': { allow: BILLING_READERS, audit: { resourceType: 'invoice', action: 'LIST' } },
  'GET /api/billing/invoices/:id': {
    allow: BILLING_READERS,
    audit: { resourceType: 'invoice', action: 'READ' },
  },
  'POST /api/billing/invoices/:id/issue': {
    allow: BILLERS,
    audit: { resourceType: 'invoice', action: 'UPDATE' },
  },
  'POST /api/billing/invoices/:id/void': {
    allow: BILLERS,
    audit: { resourceType: 'invoice', action: 'UPDATE' },
  },
  'POST /api/billing/payments': { allow: BILLERS, audit: { resourceType: 'payment', action: 'CREATE' } },

  'POST /api/patients/:patientId/documents': {
    allow: ['PROVIDER', 'NURSE', 'FRONT_DESK'],
    audit: { resourceType: 'document', action: 'CREATE' },
  },
  'GET /api/patients/:patientId/documents': {
    allow: CLINICAL_READERS,
    audit: { resourceType: 'document', action: 'LIST' },
  },
  'GET /api/documents/:documentId/download': {
    allow: CLINICAL_READERS,
    audit: { resourceType: 'document', action: 'READ' },
  },
  'DELETE /api/documents/:documentId': {
    allow: ['ADMIN', 'PROVIDER'],
    audit: { resourceType: 'document', action: 'DELETE' },
  },

  'POST /api/webhooks': { allow: ['ADMIN'], audit: { resourceType: 'webhook', action: 'CREATE' } },
  'GET /api/webhooks': { allow: ['ADMIN'], audit: { resourceType: 'webhook', action: 'LIST' } },
  'GET /api/webhooks/:id': { allow: ['ADMIN'], audit: { resourceType: 'webhook', action: 'READ' } },
  'PUT /api/webhooks/:id': { allow: ['ADMIN'], audit: { resourceType: 'webhook', action: 'UPDATE' } },
  'PATCH /api/webhooks/:id': { allow: ['ADMIN'], audit: { resourceType: 'webhook', action: 'UPDATE' } },
  'DELETE /api/webhooks/:id': { allow: ['ADMIN'], audit: { resourceType: 'webhook', action: 'DELETE' } },
  'POST /api/webhooks/:id/rotate-secret': {
    allow: ['ADMIN'],
    audit: { resourceType: 'webhook', action: 'UPDATE' },
  },
  'POST /api/webhooks/:id/test': { allow: ['ADMIN'], audit: { resourceType: 'webhook', action: 'UPDATE' } },
  'GET /api/webhooks/:id/deliveries': {
    allow: ['ADMIN'],
    audit: { resourceType: 'webhook', action: 'READ' },
  },
  'GET /api/webhooks/:id/deliveries/:deliveryId': {
    allow: ['ADMIN'],
    audit: { resourceType: 'webhook', action: 'READ' },
  },
  'POST /api/webhooks/:id/deliveries/:deliveryId/redeliver': {
    allow: ['ADMIN'],
    audit: { resourceType: 'webhook', action: 'UPDATE' },
  },

  // The change feed carries the same events as webhooks (patient identifiers), which only
  // administrators manage. Not audited: the audit trail has no resource type for events yet.
  // Events name patients by id: reading the feed is recorded like reading a list of them.
  'GET /api/events': { allow: ['ADMIN'], audit: { resourceType: 'change-feed', action: 'LIST' } },

  // Accounts and integrations decide who reaches patient data: only administrators manage them, and
  // every call is audited like a call touching that data.
  'GET /api/users': { allow: ['ADMIN'], audit: { resourceType: 'user', action: 'LIST' } },
  'GET /api/users/:id': { allow: ['ADMIN'], audit: { resourceType: 'user', action: 'READ' } },
  'POST /api/users': { allow: ['ADMIN'], audit: { resourceType: 'user', action: 'CREATE' } },
  'PUT /api/users/:id': { allow: ['ADMIN'], audit: { resourceType: 'user', action: 'UPDATE' } },
  'PATCH /api/users/:id': { allow: ['ADMIN'], audit: { resourceType: 'user', action: 'UPDATE' } },
  'POST /api/users/:id/deactivate': { allow: ['ADMIN'], audit: { resourceType: 'user', action: 'UPDATE' } },
  'POST /api/users/:id/reactivate': { allow: ['ADMIN'], audit: { resourceType: 'user', action: 'UPDATE' } },
  'POST /api/users/:id/reset-password': {
    allow: ['ADMIN'],
    audit: { resourceType: 'user', action: 'UPDATE' },
  },
  'GET /api/clients': { allow: ['ADMIN'], audit: { resourceType: 'client', action: 'LIST' } },
  'GET /api/clients/:id': { allow: ['ADMIN'], audit: { resourceType: 'client', action: 'READ' } },
  'POST /api/clients': { allow: ['ADMIN'], audit: { resourceType: 'client', action: 'CREATE' } },
  'PUT /api/clients/:id': { allow: ['ADMIN'], audit: { resourceType: 'client', action: 'UPDATE' } },
  'PATCH /api/clients/:id': { allow: ['ADMIN'], audit: { resourceType: 'client', action: 'UPDATE' } },
  'POST /api/clients/:id/rotate-secret': {
    allow: ['ADMIN'],
    audit: { resourceType: 'client', action: 'UPDATE' },
  },
  'POST /api/clients/:id/deactivate': {
    allow: ['ADMIN'],
    audit: { resourceType: 'client', action: 'UPDATE' },
  },
  'POST /api/clients/:id/reactivate': {
    allow: ['ADMIN'],
    audit: { resourceType: 'client', action: 'UPDATE' },
  },

  // Reading the audit trail is itself audited: who looked at which accesses.
  'GET /api/audit-events': { allow: ['ADMIN'], audit: { resourceType: 'audit-event', action: 'LIST' } },

  // The provider directory and its availability carry no patient data (booked time shows no patient).
  'GET /api/providers': { allow: STAFF },
  'GET /api/providers/:id': { allow: STAFF },
  'GET /api/providers/:id/schedule': { allow: STAFF },
  'POST /api/providers': { allow: ['ADMIN'] },
  'PUT /api/providers/:id': { allow: ['ADMIN'] },
  'PATCH /api/providers/:id': { allow: ['ADMIN'] },
  'PUT /api/providers/:id/hours': { allow: ['ADMIN'] },
  'POST /api/providers/:id/exceptions': { allow: ['ADMIN'] },
  'DELETE /api/providers/:id/exceptions/:exceptionId': { allow: ['ADMIN'] },

  'GET /api/appointments/available-slots': { allow: STAFF },
  'GET /api/appointments': { allow: SCHEDULERS, audit: { resourceType: 'appointment', action: 'LIST' } },
  'GET /api/appointments/:id': { allow: SCHEDULERS, audit: { resourceType: 'appointment', action: 'READ' } },
  'POST /api/appointments': { allow: SCHEDULERS, audit: { resourceType: 'appointment', action: 'CREATE' } },
  'PUT /api/appointments/:id': {
    allow: SCHEDULERS,
    audit: { resourceType: 'appointment', action: 'UPDATE' },
  },
  'PATCH /api/appointments/:id': {
    allow: SCHEDULERS,
    audit: { resourceType: 'appointment', action: 'UPDATE' },
  },
  'POST /api/appointments/:id/cancel': {
    allow: SCHEDULERS,
    audit: { resourceType: 'appointment', action: 'CANCEL' },
  },

  'GET /api/encounters': { allow: CLINICAL_READERS, audit: { resourceType: 'encounter', action: 'LIST' } },
  'GET /api/encounters/:id': {
    allow: CLINICAL_READERS,
    audit: { resourceType: 'encounter', action: 'READ' },
  },
  'POST /api/encounters': { allow: CLINICIANS, audit: { resourceType: 'encounter', action: 'CREATE' } },
  'PUT /api/encounters/:id': { allow: CLINICIANS, audit: { resourceType: 'encounter', action: 'UPDATE' } },
  'PATCH /api/encounters/:id': { allow: CLINICIANS, audit: { resourceType: 'encounter', action: 'UPDATE' } },
  'POST /api/encounters/:id/sign': {
    allow: CLINICIANS,
    audit: { resourceType: 'encounter', action: 'SIGN' },
  },
  'POST /api/encounters/:id/addendum': {
    allow: CLINICIANS,
    audit: { resourceType: 'encounter', action: 'AMEND' },
  },
}

export const routeKey = (method: string, url: string) => `${method} ${url}`

export function describeAccess(access: RouteAccess): string {
  if (access.allow === 'public') return 'Public: no token needed.'
  if (access.allow === 'authenticated') return 'Requires a valid access token (any role).'
  return `Requires one of the roles: ${access.allow.join(', ')}.`
}
