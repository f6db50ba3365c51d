import type { Role } from './roles.js'

export type AuditAction = 'READ' | 'LIST' | 'SEARCH' | 'CREATE' | 'UPDATE' | 'DELETE'

export interface RouteAccess {
  /** `public`: no token; `authenticated`: any valid token; otherwise at least one of the roles. */
  allow: 'public' | 'authenticated' | readonly Role[]
  /**
   * Routes that touch patient data leave an audit record of who did what to which records; so do
   * webhook routes, since a webhook decides where events about patients are sent.
   */
  audit?: { resourceType: 'patient' | 'webhook'; action: AuditAction }
}

const CLINICAL_READERS: readonly Role[] = ['PROVIDER', 'NURSE']
const STAFF: readonly Role[] = ['ADMIN', 'PROVIDER', 'NURSE', 'FRONT_DESK', 'BILLING']
const REGISTRARS: readonly Role[] = ['ADMIN', 'PROVIDER', 'NURSE', 'FRONT_DESK']

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

  'POST /api/webhooks': { allow: ['ADMIN'], audit: { resourceType: 'webhook', action: 'CREATE' } },
  'GET /api/webhooks': { allow: ['ADMIN'], audit: { resourceType: 'webhook', action: 'LIST' } },
  'GET /api/webhooks/:id': { allow: ['ADMIN'], audit: { resourceType: 'webhook', action: 'READ' } },
  'PUT /api/webhooks/:id': { allow: ['ADMIN'], audit: { resourceType: 'webhook', action: 'UPDATE' } },
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
}

export const routeKey = (method: string, url: string) => `${method} ${url}`

export function describeAccess(access: RouteAccess): string {
  if (access.allow === 'public') return 'Public: no token needed.'
  if (access.allow === 'authenticated') return 'Requires a valid access token (any role).'
  return `Requires one of the roles: ${access.allow.join(', ')}.`
}
