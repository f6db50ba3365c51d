import { hasAnyRole, type Role } from '../../access/roles.js'
import { ROUTE_ACCESS, type RouteAccess } from '../../access/route-access.js'
import type { Principal } from '../../identity/principal.js'
import type { FhirResourceType } from './resource-type.js'
import { type ScopeGrant, scopeGrant } from './scopes.js'

/** The access rule (roles and audit) of the REST route whose records a FHIR interaction reads. */
export function accessOf(route: string): RouteAccess & { allow: readonly Role[] } {
  const access = ROUTE_ACCESS[route]
  if (!access || !Array.isArray(access.allow))
    throw new Error(`${route} has no role list in the access table`)
  return access as RouteAccess & { allow: readonly Role[] }
}

/**
 * Whether the caller may read or search a type: the roles of the REST route of the same records
 * first, then the token's SMART scopes.
 */
export function typeGrant(
  principal: Principal,
  type: FhirResourceType,
  interaction: 'read' | 'search',
): ScopeGrant {
  const roles = accessOf(interaction === 'read' ? type.restRead : type.restSearch).allow
  if (!hasAnyRole(principal.authorities, roles)) {
    return { allowed: false, reason: `Reading ${type.type} requires one of the roles: ${roles.join(', ')}` }
  }
  return scopeGrant(principal, type.type, interaction)
}
