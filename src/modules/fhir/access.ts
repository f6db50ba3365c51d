import { hasAnyRole, type Role } from '../../access/roles.js'
import { ROUTE_ACCESS, type RouteAccess, type RouteKey } from '../../access/route-access.js'
import type { ScopeInteraction } from '../../access/smart-scopes.js'
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

/** The REST route whose roles and audit an interaction with a type follows; none: not served. */
function restRouteOf(type: FhirResourceType, interaction: ScopeInteraction): RouteKey | undefined {
  if (interaction === 'read') return type.restRead
  if (interaction === 'search') return type.restSearch
  return type.writes?.rest[interaction]
}

/**
 * Whether the caller may do an interaction with a type: the roles of the REST route of the same
 * records first, then the token's SMART scopes.
 */
export function typeGrant(
  principal: Principal,
  type: FhirResourceType,
  interaction: ScopeInteraction,
): ScopeGrant {
  if (!rolesAllow(principal.authorities, type, interaction)) {
    const roles = rolesFor(type, interaction)
    const doing = interaction === 'read' || interaction === 'search' ? 'Reading' : 'Writing'
    return {
      allowed: false,
      reason:
        roles.length > 0
          ? `${doing} ${type.type} requires one of the roles: ${roles.join(', ')}`
          : `${type.type} is not written here`,
    }
  }
  return scopeGrant(principal, type.type, interaction)
}

/**
 * The roles of the REST route of the same records; for reads and searches of a type a patient may
 * read (FhirResourceType.patientAccess), PATIENT besides, which opens no REST route: a patient's own
 * account is kept to its compartment by its grant (scopeGrant), whatever its token's scopes.
 */
const rolesFor = (type: FhirResourceType, interaction: ScopeInteraction): readonly Role[] => {
  const route = restRouteOf(type, interaction)
  const roles = route ? accessOf(route).allow : []
  const reads = interaction === 'read' || interaction === 'search'
  return reads && type.patientAccess !== undefined ? [...roles, 'PATIENT'] : roles
}

/** Whether holders of these authorities (`ROLE_…`) may do the interaction with the type, scopes aside. */
const rolesAllow = (
  authorities: ReadonlySet<string>,
  type: FhirResourceType,
  interaction: ScopeInteraction,
) => hasAnyRole(authorities, rolesFor(type, interaction))

/** The types served and what roles may do with each, for the SMART scopes the token endpoint grants. */
export function scopeRules(types: readonly FhirResourceType[]) {
  return {
    types: [...types.map((type) => type.type), 'Provenance'],
    allows(authorities: ReadonlySet<string>, name: string, interaction: ScopeInteraction) {
      // A record's provenance is read by those who read the record: by anyone who reads some type.
      if (name === 'Provenance') {
        const reads = interaction === 'read' || interaction === 'search'
        return reads && types.some((type) => rolesAllow(authorities, type, 'read'))
      }
      const type = types.find((candidate) => candidate.type === name)
      return type !== undefined && rolesAllow(authorities, type, interaction)
    },
  }
}
