import { hasAnyRole, type Role } from '../../access/roles.js'
import { ROUTE_ACCESS, type RouteAccess, type RouteKey } from '../../access/route-access.js'
import type { Principal } from '../../identity/principal.js'
import type { FhirResourceType } from './resource-type.js'
import { type ScopeGrant, scopeGrant } from './scopes.js'

/** The access rule (roles and audit) of the REST route whose records a FHIR interaction reads. */
export function accessOf(route: RouteKey): RouteAccess & { allow: readonly Role[] } {
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
  if (!rolesAllow(principal.authorities, type, interaction)) {
    const roles = rolesFor(type, interaction)
    return { allowed: false, reason: `Reading ${type.type} requires one of the roles: ${roles.join(', ')}` }
  }
  return scopeGrant(principal, type.type, interaction)
}

const rolesFor = (type: FhirResourceType, interaction: 'read' | 'search') =>
  accessOf(interaction === 'read' ? type.restRead : type.restSearch).allow

/** Whether holders of these authorities (`ROLE_…`) may read or search the type, scopes aside. */
const rolesAllow = (
  authorities: ReadonlySet<string>,
  type: FhirResourceType,
  interaction: 'read' | 'search',
) => hasAnyRole(authorities, rolesFor(type, interaction))

/** The types served and what roles may do with each, for the SMART scopes the token endpoint grants. */
export function scopeRules(types: readonly FhirResourceType[]) {
  return {
    types: types.map((type) => type.type),
    allows(authorities: ReadonlySet<string>, name: string, interaction: 'read' | 'search') {
      const type = types.find((candidate) => candidate.type === name)
      return type !== undefined && rolesAllow(authorities, type, interaction)
    },
  }
}
