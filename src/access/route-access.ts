import type { Role } from './roles.js'

export type AuditAction =
  | 'READ'
  | 'LIST'
  | 'SEARCH'
  | 'CREATE'
  | 'UPDATE'
  | 'DELETE'
  | 'CANCEL'
  | 'SIGN'
  | 'AMEND'
export type AuditResource = 'patient' | 'appointment' | 'encounter'

export interface RouteAccess {
  /** `public`: no token; `authenticated`: any valid token; otherwise at least one of the roles. */
  allow: 'public' | 'authenticated' | readonly Role[]
  /** Routes that touch patient data leave an audit record of who did what to which records. */
  audit?: { resourceType: AuditResource; action: AuditAction }
}

const CLINICAL_READERS: readonly Role[] = ['PROVIDER', 'NURSE']
const STAFF: readonly Role[] = ['ADMIN', 'PROVIDER', 'NURSE', 'FRONT_DESK', 'BILLING']
const REGISTRARS: readonly Role[] = ['ADMIN', 'PROVIDER', 'NURSE', 'FRONT_DESK']
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
  'DELETE /api/patients/:id': { allow: ['ADMIN'], audit: { resourceType: 'patient', action: 'DELETE' } },

  // The provider directory and its availability carry no patient data (booked time shows no patient).
  'GET /api/providers': { allow: STAFF },
  'GET /api/providers/:id': { allow: STAFF },
  'GET /api/providers/:id/schedule': { allow: STAFF },
  'POST /api/providers': { allow: ['ADMIN'] },
  'PUT /api/providers/:id': { allow: ['ADMIN'] },
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
