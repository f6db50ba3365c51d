import type { AuditAction, AuditResource } from '../../schemas/audit.js'
import type { Role } from './roles.js'

export interface RouteAccess {
  /** `public`: no token; `authenticated`: any valid token; otherwise at least one of the roles. */
  allow: 'public' | 'authenticated' | readonly Role[]
  /**
   * Why these roles and no others: the minimum necessary for their work in a practice's day.
   * Published in the operation's OpenAPI description and in docs/reference/roles.md.
   */
  why?: string
  /**
   * Routes that touch patient data leave an audit record of who did what to which records; so do
   * webhook routes, since a webhook decides where events about patients are sent.
   */
  audit?: { resourceType: AuditResource; action: AuditAction }
}

/** Roles given a kind of route, and why (the minimum necessary): spread into a route's rule. */
interface Audience {
  allow: readonly Role[]
  why: string
}

/**
 * What each role needs for a practice's day, the reasoning the table below follows: a role gets a
 * route when its work needs that route, and no route merely because it does no harm elsewhere.
 */
export const ROLE_NEEDS: Record<Role, string> = {
  ADMIN:
    'Runs the practice: accounts, integration clients, SMART apps and the grants users gave them, webhooks, the change feed, providers and their hours, the audit trail; registers, books and (alone, as the specification requires) deletes patients; handles billing with BILLING. No clinical records, encounters or document contents (it may remove a misfiled document): an administrator who treats patients also holds PROVIDER, as the bootstrap administrator does.',
  PROVIDER:
    'Treats patients: lists and reads them, reads and writes every clinical record, writes and signs visit notes, reads and uploads documents, opens SMART apps in a patient’s context, books and runs appointments and telehealth visits, and reads invoices to answer questions about the charges of their care.',
  NURSE:
    'Assists care: lists and reads patients, reads the chart, visit notes and documents, opens SMART apps in a patient’s context, records vital signs (the other clinical records and notes are the provider’s to write), registers patients, books and checks in appointments, runs telehealth rooms.',
  FRONT_DESK:
    'Reception: registers patients and keeps their demographics current, finds them by search (the full list stays PROVIDER and NURSE, as the specification fixes), books, reschedules, checks in and cancels appointments, sees the day’s schedule, opens telehealth rooms and prepares patients’ links, uploads the papers patients bring, and gives patients their own accounts (and ends them). Never clinical records, encounters, clinical documents (an upload is write-only) or other people’s messages.',
  BILLING:
    'Bills: invoices and payments, and the demographics of the person billed (read and search). No clinical records, encounters, documents or appointments.',
  PATIENT:
    'A patient’s own account (invited from their record): reads and searches their own records through FHIR (/fhir/R4: Patient, Observation, DiagnosticReport, Condition, AllergyIntolerance, MedicationStatement, MedicationRequest, Encounter, Appointment, DocumentReference, and the practice’s Practitioner directory), kept to their own compartment whatever the token’s scopes, and writes nothing. No `/api` route but `GET /api/auth/me` and its own grants to SMART apps (`/api/me/app-grants`), since every other one serves the practice’s staff.',
  USER: 'The base role of an account; opens only the routes any valid token may call (`GET /api/auth/me`, and the account’s own grants to SMART apps under `/api/me/app-grants`).',
}

const STAFF: Audience = {
  allow: ['ADMIN', 'PROVIDER', 'NURSE', 'FRONT_DESK', 'BILLING'],
  why: 'Every member of the practice deals with patients by name: demographics only, no clinical data.',
}
const PATIENT_FINDERS: Audience = {
  allow: STAFF.allow,
  why: 'Finding the right person to register, book or bill needs a search over demographics, answered only with matches of a query; the full list stays PROVIDER and NURSE, as the specification fixes.',
}
const PATIENT_LIST: Audience = {
  allow: ['PROVIDER', 'NURSE'],
  why: 'The specification gives the full list of patients to PROVIDER and NURSE; everyone else finds a patient by search.',
}
const REGISTRARS: Audience = {
  allow: ['ADMIN', 'PROVIDER', 'NURSE', 'FRONT_DESK'],
  why: 'Registering patients and keeping their demographics current is reception’s work, and that of the clinical staff and the administrator; billing only reads them.',
}
const CLINICAL_READERS: Audience = {
  allow: ['PROVIDER', 'NURSE'],
  why: 'Clinical records are read by those who treat the patient; administration, reception and billing do their work without them.',
}
const VITALS_WRITERS: Audience = {
  allow: ['PROVIDER', 'NURSE'],
  why: 'Vital signs are taken by nurses and providers.',
}
const CLINICIANS: Audience = {
  allow: ['PROVIDER'],
  why: 'Results, diagnoses, allergies, prescriptions and visit notes are the treating provider’s to write.',
}
const SCHEDULERS: Audience = {
  allow: ['ADMIN', 'PROVIDER', 'NURSE', 'FRONT_DESK'],
  why: 'Booking, rescheduling, checking in, cancelling and the day’s schedule are reception’s work, and that of the clinical staff and the administrator; an appointment carries the reason for the visit, which billing does not need.',
}
const DIRECTORY: Audience = {
  allow: STAFF.allow,
  why: 'The provider directory and providers’ free time carry no patient data (booked time shows no patient).',
}
const TELEHEALTH: Audience = {
  allow: REGISTRARS.allow,
  why: 'Whoever books a visit opens its room and prepares the patient’s link; the room itself checks who may join as which party.',
}
const BILLERS: Audience = {
  allow: ['BILLING', 'ADMIN'],
  why: 'Invoices and payments are billing’s work, and the administrator’s.',
}
const BILLING_READERS: Audience = {
  allow: ['BILLING', 'ADMIN', 'PROVIDER'],
  why: 'Billing and the administrator, and providers answering patients’ questions about the charges of their care.',
}
const MESSAGING: Audience = {
  allow: STAFF.allow,
  why: 'Every member of the practice sends and receives messages; each sees only the messages they sent or received.',
}
const PRACTICE_DETAILS: Audience = {
  allow: STAFF.allow,
  why: 'The practice’s name, NPI and contact details carry no patient data: every member of the practice reads them.',
}
const PRACTICE_PUBLISHERS: Audience = {
  allow: ['ADMIN'],
  why: 'What the practice publishes about itself (its NPI, address and contacts, in FHIR too) is the administrator’s to keep.',
}
const PRACTICE_SETUP: Audience = {
  allow: ['ADMIN'],
  why: 'Providers, their working hours and time off are set up by the administrator.',
}
const PATIENT_ACCOUNT_MANAGERS: Audience = {
  allow: ['ADMIN', 'FRONT_DESK'],
  why: 'Reception gives a patient their own account from the patient’s record, as it registers them, and ends it; the administrator manages every account. The account reads only that patient’s records.',
}
// Every call is audited like a call touching patient data.
const ACCOUNT_ADMINISTRATORS: Audience = {
  allow: ['ADMIN'],
  why: 'Accounts and integrations decide who reaches patient data: only the administrator manages them.',
}
const APP_ADMINISTRATORS: Audience = {
  allow: ['ADMIN'],
  why: 'A SMART app reaches patient data with the grants users give it: only the administrator registers apps and oversees their grants.',
}
const LAUNCHERS: Audience = {
  allow: CLINICAL_READERS.allow,
  why: 'An EHR launch opens an app in a patient’s chart: those who read clinical records open it.',
}
const WEBHOOK_ADMINISTRATORS: Audience = {
  allow: ['ADMIN'],
  why: 'A webhook decides where events about patients are sent: only the administrator manages them.',
}

/** The REST path segment of each kind of clinical record, under /api/patients/:patientId/. */
export type ClinicalPath = 'vitals' | 'lab-results' | 'conditions' | 'allergies' | 'medications'

type ClinicalRouteKey<P extends ClinicalPath> =
  | `${'POST' | 'GET'} /api/patients/:patientId/${P}`
  | `${'GET' | 'PUT' | 'PATCH'} /api/patients/:patientId/${P}/:id`
  | `POST /api/patients/:patientId/${P}/:id/entered-in-error`

/** The six routes of a kind of clinical record: PROVIDER and NURSE read, `writers` write. */
function clinicalRecordRoutes<P extends ClinicalPath>(
  path: P,
  resourceType: AuditResource,
  writers: Audience,
): Record<ClinicalRouteKey<P>, RouteAccess> {
  const collection = `/api/patients/:patientId/${path}`
  const item = `${collection}/:id`
  const routes = {
    [`POST ${collection}`]: { ...writers, audit: { resourceType, action: 'CREATE' } },
    [`GET ${collection}`]: { ...CLINICAL_READERS, audit: { resourceType, action: 'LIST' } },
    [`GET ${item}`]: { ...CLINICAL_READERS, audit: { resourceType, action: 'READ' } },
    [`PUT ${item}`]: { ...writers, audit: { resourceType, action: 'UPDATE' } },
    [`PATCH ${item}`]: { ...writers, audit: { resourceType, action: 'UPDATE' } },
    [`POST ${item}/entered-in-error`]: { ...writers, audit: { resourceType, action: 'UPDATE' } },
  } satisfies Record<string, RouteAccess>
  // Template keys widen to string: the six built above are the six of the type.
  return routes as Record<ClinicalRouteKey<P>, RouteAccess>
}

type ReadKey<I extends string> = `GET ${I}` | `GET ${I}/versions` | `GET ${I}/versions/:version`

/** A record's read and the read of its earlier versions (src/http/version-routes.ts), under one rule. */
function readWithVersions<I extends string>(item: I, read: RouteAccess): Record<ReadKey<I>, RouteAccess> {
  const routes = {
    [`GET ${item}`]: read,
    [`GET ${item}/versions`]: read,
    [`GET ${item}/versions/:version`]: read,
  }
  // Template keys widen to string: the three built above are the three of the type.
  return routes as Record<ReadKey<I>, RouteAccess>
}

/** The table's keys as written, each with a rule. */
const accessTable = <K extends string>(routes: Record<K, RouteAccess>) => routes

/**
 * Who may call each `/api` route, and why: the one place access rules live. Every registered `/api`
 * route must appear here (the app refuses to start otherwise); the OpenAPI descriptions, the roles
 * reference and the authorization tests read this table, and FHIR reads follow the REST route of
 * the same records. Organization scoping applies on top of roles: a caller only ever reaches
 * records of their own organization.
 */
export const ROUTE_ACCESS = accessTable({
  'POST /api/auth/login': { allow: 'public' },
  'POST /api/auth/refresh': { allow: 'public' },
  'POST /api/auth/logout': { allow: 'public' },
  'POST /api/auth/idp-login': { allow: 'public' },
  'POST /api/auth/forgot-password': { allow: 'public' },
  'POST /api/auth/reset-password': { allow: 'public' },
  // Public so that a user with a temporary password (who gets no tokens) can change it; the route
  // itself checks a bearer token when one is sent, and the current password always.
  'POST /api/auth/change-password': {
    allow: 'public',
    why: 'A user with a temporary password gets no tokens, so the route takes the username and current password instead; a bearer token, when sent, is checked.',
  },
  'GET /api/auth/me': { allow: 'authenticated' },

  'GET /api/patients': { ...PATIENT_LIST, audit: { resourceType: 'patient', action: 'LIST' } },
  'GET /api/patients/search': { ...PATIENT_FINDERS, audit: { resourceType: 'patient', action: 'SEARCH' } },
  ...readWithVersions('/api/patients/:id', { ...STAFF, audit: { resourceType: 'patient', action: 'READ' } }),
  'POST /api/patients': { ...REGISTRARS, audit: { resourceType: 'patient', action: 'CREATE' } },
  'PUT /api/patients/:id': { ...REGISTRARS, audit: { resourceType: 'patient', action: 'UPDATE' } },
  'PATCH /api/patients/:id': { ...REGISTRARS, audit: { resourceType: 'patient', action: 'UPDATE' } },
  'DELETE /api/patients/:id': {
    allow: ['ADMIN'],
    why: 'The specification reserves deleting a patient for ADMIN.',
    audit: { resourceType: 'patient', action: 'DELETE' },
  },

  ...clinicalRecordRoutes('vitals', 'vital-signs', VITALS_WRITERS),
  ...clinicalRecordRoutes('lab-results', 'lab-result', CLINICIANS),
  ...clinicalRecordRoutes('conditions', 'condition', CLINICIANS),
  ...clinicalRecordRoutes('allergies', 'allergy', CLINICIANS),
  ...clinicalRecordRoutes('medications', 'medication', CLINICIANS),
  'POST /api/patients/:patientId/account': {
    ...PATIENT_ACCOUNT_MANAGERS,
    audit: { resourceType: 'user', action: 'CREATE' },
  },
  'GET /api/patients/:patientId/account': {
    ...PATIENT_ACCOUNT_MANAGERS,
    audit: { resourceType: 'user', action: 'READ' },
  },
  // Deactivated, not deleted: recorded as POST /api/users/:id/deactivate is.
  'DELETE /api/patients/:patientId/account': {
    ...PATIENT_ACCOUNT_MANAGERS,
    audit: { resourceType: 'user', action: 'UPDATE' },
  },
  'GET /api/patients/:patientId/chart': {
    ...CLINICAL_READERS,
    audit: { resourceType: 'patient', action: 'READ' },
  },

  'POST /api/telehealth/rooms': {
    ...TELEHEALTH,
    audit: { resourceType: 'telehealth-room', action: 'CREATE' },
  },
  'GET /api/telehealth/rooms/:id': {
    ...TELEHEALTH,
    audit: { resourceType: 'telehealth-room', action: 'READ' },
  },
  'POST /api/telehealth/rooms/:id/close': {
    allow: ['ADMIN', 'PROVIDER', 'NURSE'],
    why: 'A visit’s room is ended by the clinical staff who held it, or the administrator.',
    audit: { resourceType: 'telehealth-room', action: 'UPDATE' },
  },
  'POST /api/telehealth/jitsi/join': {
    ...TELEHEALTH,
    audit: { resourceType: 'telehealth-room', action: 'READ' },
  },

  'POST /api/messages': { ...MESSAGING, audit: { resourceType: 'message', action: 'CREATE' } },
  'GET /api/messages': { ...MESSAGING, audit: { resourceType: 'message', action: 'LIST' } },
  ...readWithVersions('/api/messages/:id', {
    ...MESSAGING,
    audit: { resourceType: 'message', action: 'READ' },
  }),
  'PUT /api/messages/:id/read': { ...MESSAGING, audit: { resourceType: 'message', action: 'UPDATE' } },

  'POST /api/billing/invoices': { ...BILLERS, audit: { resourceType: 'invoice', action: 'CREATE' } },
  'GET /api/billing/invoices': { ...BILLING_READERS, audit: { resourceType: 'invoice', action: 'LIST' } },
  ...readWithVersions('/api/billing/invoices/:id', {
    ...BILLING_READERS,
    audit: { resourceType: 'invoice', action: 'READ' },
  }),
  'POST /api/billing/invoices/:id/issue': {
    ...BILLERS,
    audit: { resourceType: 'invoice', action: 'UPDATE' },
  },
  'POST /api/billing/invoices/:id/void': {
    ...BILLERS,
    audit: { resourceType: 'invoice', action: 'UPDATE' },
  },
  'POST /api/billing/payments': { ...BILLERS, audit: { resourceType: 'payment', action: 'CREATE' } },

  'POST /api/patients/:patientId/documents': {
    allow: ['PROVIDER', 'NURSE', 'FRONT_DESK'],
    why: 'Clinical staff attach documents; reception scans the papers patients bring (forms, referral letters, insurance cards). Uploading shows reception only what it uploads: listing and downloading stay clinical.',
    audit: { resourceType: 'document', action: 'CREATE' },
  },
  'GET /api/patients/:patientId/documents': {
    ...CLINICAL_READERS,
    audit: { resourceType: 'document', action: 'LIST' },
  },
  'GET /api/documents/:documentId/download': {
    ...CLINICAL_READERS,
    audit: { resourceType: 'document', action: 'READ' },
  },
  'DELETE /api/documents/:documentId': {
    allow: ['ADMIN', 'PROVIDER'],
    why: 'A misfiled document is removed by a provider or the administrator (its bytes are kept for the retention period).',
    audit: { resourceType: 'document', action: 'DELETE' },
  },

  'POST /api/webhooks': { ...WEBHOOK_ADMINISTRATORS, audit: { resourceType: 'webhook', action: 'CREATE' } },
  'GET /api/webhooks': { ...WEBHOOK_ADMINISTRATORS, audit: { resourceType: 'webhook', action: 'LIST' } },
  ...readWithVersions('/api/webhooks/:id', {
    ...WEBHOOK_ADMINISTRATORS,
    audit: { resourceType: 'webhook', action: 'READ' },
  }),
  'PUT /api/webhooks/:id': {
    ...WEBHOOK_ADMINISTRATORS,
    audit: { resourceType: 'webhook', action: 'UPDATE' },
  },
  'PATCH /api/webhooks/:id': {
    ...WEBHOOK_ADMINISTRATORS,
    audit: { resourceType: 'webhook', action: 'UPDATE' },
  },
  'DELETE /api/webhooks/:id': {
    ...WEBHOOK_ADMINISTRATORS,
    audit: { resourceType: 'webhook', action: 'DELETE' },
  },
  'POST /api/webhooks/:id/rotate-secret': {
    ...WEBHOOK_ADMINISTRATORS,
    audit: { resourceType: 'webhook', action: 'UPDATE' },
  },
  'POST /api/webhooks/:id/test': {
    ...WEBHOOK_ADMINISTRATORS,
    audit: { resourceType: 'webhook', action: 'UPDATE' },
  },
  'GET /api/webhooks/:id/deliveries': {
    ...WEBHOOK_ADMINISTRATORS,
    audit: { resourceType: 'webhook', action: 'READ' },
  },
  'GET /api/webhooks/:id/deliveries/:deliveryId': {
    ...WEBHOOK_ADMINISTRATORS,
    audit: { resourceType: 'webhook', action: 'READ' },
  },
  'POST /api/webhooks/:id/deliveries/:deliveryId/redeliver': {
    ...WEBHOOK_ADMINISTRATORS,
    audit: { resourceType: 'webhook', action: 'UPDATE' },
  },

  // Events name patients by id: reading the feed is recorded like reading a list of them.
  'GET /api/events': {
    allow: ['ADMIN'],
    why: 'The change feed carries the events webhooks carry (patient identifiers), which only the administrator manages.',
    audit: { resourceType: 'change-feed', action: 'LIST' },
  },

  'GET /api/users': { ...ACCOUNT_ADMINISTRATORS, audit: { resourceType: 'user', action: 'LIST' } },
  'GET /api/users/:id': { ...ACCOUNT_ADMINISTRATORS, audit: { resourceType: 'user', action: 'READ' } },
  'POST /api/users': { ...ACCOUNT_ADMINISTRATORS, audit: { resourceType: 'user', action: 'CREATE' } },
  'PUT /api/users/:id': { ...ACCOUNT_ADMINISTRATORS, audit: { resourceType: 'user', action: 'UPDATE' } },
  'PATCH /api/users/:id': { ...ACCOUNT_ADMINISTRATORS, audit: { resourceType: 'user', action: 'UPDATE' } },
  'POST /api/users/:id/deactivate': {
    ...ACCOUNT_ADMINISTRATORS,
    audit: { resourceType: 'user', action: 'UPDATE' },
  },
  'POST /api/users/:id/reactivate': {
    ...ACCOUNT_ADMINISTRATORS,
    audit: { resourceType: 'user', action: 'UPDATE' },
  },
  'POST /api/users/:id/reset-password': {
    ...ACCOUNT_ADMINISTRATORS,
    audit: { resourceType: 'user', action: 'UPDATE' },
  },
  'GET /api/clients': { ...ACCOUNT_ADMINISTRATORS, audit: { resourceType: 'client', action: 'LIST' } },
  'GET /api/clients/:id': { ...ACCOUNT_ADMINISTRATORS, audit: { resourceType: 'client', action: 'READ' } },
  'POST /api/clients': { ...ACCOUNT_ADMINISTRATORS, audit: { resourceType: 'client', action: 'CREATE' } },
  'PUT /api/clients/:id': { ...ACCOUNT_ADMINISTRATORS, audit: { resourceType: 'client', action: 'UPDATE' } },
  'PATCH /api/clients/:id': {
    ...ACCOUNT_ADMINISTRATORS,
    audit: { resourceType: 'client', action: 'UPDATE' },
  },
  'POST /api/clients/:id/rotate-secret': {
    ...ACCOUNT_ADMINISTRATORS,
    audit: { resourceType: 'client', action: 'UPDATE' },
  },
  'POST /api/clients/:id/deactivate': {
    ...ACCOUNT_ADMINISTRATORS,
    audit: { resourceType: 'client', action: 'UPDATE' },
  },
  'POST /api/clients/:id/reactivate': {
    ...ACCOUNT_ADMINISTRATORS,
    audit: { resourceType: 'client', action: 'UPDATE' },
  },

  'GET /api/smart-apps': { ...APP_ADMINISTRATORS, audit: { resourceType: 'smart-app', action: 'LIST' } },
  'GET /api/smart-apps/:id': { ...APP_ADMINISTRATORS, audit: { resourceType: 'smart-app', action: 'READ' } },
  'POST /api/smart-apps': { ...APP_ADMINISTRATORS, audit: { resourceType: 'smart-app', action: 'CREATE' } },
  'PATCH /api/smart-apps/:id': {
    ...APP_ADMINISTRATORS,
    audit: { resourceType: 'smart-app', action: 'UPDATE' },
  },
  'POST /api/smart-apps/:id/rotate-secret': {
    ...APP_ADMINISTRATORS,
    audit: { resourceType: 'smart-app', action: 'UPDATE' },
  },
  'POST /api/smart-apps/:id/deactivate': {
    ...APP_ADMINISTRATORS,
    audit: { resourceType: 'smart-app', action: 'UPDATE' },
  },
  'POST /api/smart-apps/:id/reactivate': {
    ...APP_ADMINISTRATORS,
    audit: { resourceType: 'smart-app', action: 'UPDATE' },
  },
  'GET /api/app-grants': { ...APP_ADMINISTRATORS, audit: { resourceType: 'app-grant', action: 'LIST' } },
  'GET /api/app-grants/:id': { ...APP_ADMINISTRATORS, audit: { resourceType: 'app-grant', action: 'READ' } },
  'DELETE /api/app-grants/:id': {
    ...APP_ADMINISTRATORS,
    audit: { resourceType: 'app-grant', action: 'DELETE' },
  },
  // Any account (a patient's too) sees and revokes what it allowed apps; a token issued to an app
  // reaches no /api route (src/plugins/route-conventions.ts).
  'GET /api/me/app-grants': {
    allow: 'authenticated',
    why: 'Everyone manages what they allowed apps: their own grants only.',
    audit: { resourceType: 'app-grant', action: 'LIST' },
  },
  'DELETE /api/me/app-grants/:id': {
    allow: 'authenticated',
    why: 'Everyone manages what they allowed apps: their own grants only.',
    audit: { resourceType: 'app-grant', action: 'DELETE' },
  },
  'POST /api/smart-launches': { ...LAUNCHERS, audit: { resourceType: 'smart-launch', action: 'CREATE' } },

  // Reading the audit trail is itself audited: who looked at which accesses.
  'GET /api/audit-events': {
    allow: ['ADMIN'],
    why: 'The audit trail says who looked at which patients: the administrator reviews it.',
    audit: { resourceType: 'audit-event', action: 'LIST' },
  },

  'GET /api/organizations/:id': { ...PRACTICE_DETAILS },
  'PUT /api/organizations/:id': { ...PRACTICE_PUBLISHERS },
  'PATCH /api/organizations/:id': { ...PRACTICE_PUBLISHERS },

  'GET /api/providers': { ...DIRECTORY },
  'GET /api/providers/:id': { ...DIRECTORY },
  'GET /api/providers/:id/schedule': { ...DIRECTORY },
  'POST /api/providers': { ...PRACTICE_SETUP },
  'PUT /api/providers/:id': { ...PRACTICE_SETUP },
  'PATCH /api/providers/:id': { ...PRACTICE_SETUP },
  'PUT /api/providers/:id/hours': { ...PRACTICE_SETUP },
  'POST /api/providers/:id/exceptions': { ...PRACTICE_SETUP },
  'DELETE /api/providers/:id/exceptions/:exceptionId': { ...PRACTICE_SETUP },

  'GET /api/appointments/available-slots': { ...DIRECTORY },
  'GET /api/appointments': { ...SCHEDULERS, audit: { resourceType: 'appointment', action: 'LIST' } },
  ...readWithVersions('/api/appointments/:id', {
    ...SCHEDULERS,
    audit: { resourceType: 'appointment', action: 'READ' },
  }),
  'POST /api/appointments': { ...SCHEDULERS, audit: { resourceType: 'appointment', action: 'CREATE' } },
  'PUT /api/appointments/:id': {
    ...SCHEDULERS,
    audit: { resourceType: 'appointment', action: 'UPDATE' },
  },
  'PATCH /api/appointments/:id': {
    ...SCHEDULERS,
    audit: { resourceType: 'appointment', action: 'UPDATE' },
  },
  'POST /api/appointments/:id/cancel': {
    ...SCHEDULERS,
    audit: { resourceType: 'appointment', action: 'CANCEL' },
  },

  'GET /api/encounters': { ...CLINICAL_READERS, audit: { resourceType: 'encounter', action: 'LIST' } },
  ...readWithVersions('/api/encounters/:id', {
    ...CLINICAL_READERS,
    audit: { resourceType: 'encounter', action: 'READ' },
  }),
  'POST /api/encounters': { ...CLINICIANS, audit: { resourceType: 'encounter', action: 'CREATE' } },
  'PUT /api/encounters/:id': { ...CLINICIANS, audit: { resourceType: 'encounter', action: 'UPDATE' } },
  'PATCH /api/encounters/:id': { ...CLINICIANS, audit: { resourceType: 'encounter', action: 'UPDATE' } },
  'POST /api/encounters/:id/sign': {
    ...CLINICIANS,
    audit: { resourceType: 'encounter', action: 'SIGN' },
  },
  'POST /api/encounters/:id/addendum': {
    ...CLINICIANS,
    audit: { resourceType: 'encounter', action: 'AMEND' },
  },
})

/** `METHOD /api/...` of a route in the access table: a FHIR type's REST routes are checked by the compiler. */
export type RouteKey = keyof typeof ROUTE_ACCESS

export const routeKey = (method: string, url: string) => `${method} ${url}`

/** The rule of a route registered at run time, if the table has one. */
export const accessRuleOf = (key: string): RouteAccess | undefined =>
  Object.hasOwn(ROUTE_ACCESS, key) ? ROUTE_ACCESS[key as RouteKey] : undefined

/** The access part of an operation's OpenAPI description: who may call it, and why. */
export function describeAccess(access: RouteAccess): string {
  const why = access.why ? ` ${access.why}` : ''
  if (access.allow === 'public') return `Public: no token needed.${why}`
  if (access.allow === 'authenticated') return `Requires a valid access token (any role).${why}`
  return `Requires one of the roles: ${access.allow.join(', ')}.${why}`
}
