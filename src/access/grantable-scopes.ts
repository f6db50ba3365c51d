import { parseSmartScope, SCOPE_INTERACTIONS, type ScopeInteraction } from './smart-scopes.js'

/** What the FHIR interface serves, for granting SMART scopes: its types, and what roles may do with each. */
export interface FhirScopeRules {
  types: readonly string[]
  allows(authorities: ReadonlySet<string>, type: string, interaction: ScopeInteraction): boolean
}

// v1 scopes grant their interactions in these groups only: `read` and `write`.
const V1_GROUPS = { read: ['read', 'search'], write: ['create', 'update', 'delete'] } as const

/**
 * A scope's permissions (what follows its type) for `allowed`, the part of what it asks that a
 * type's roles allow: v2 letters in their order; v1 `*`, `read` or `write`, each a whole group
 * (undefined when no group is whole).
 */
function permissionsFor(v1: boolean, allowed: readonly ScopeInteraction[]): string | undefined {
  if (!v1) return allowed.map((interaction) => interaction[0]).join('') || undefined
  const whole = (Object.keys(V1_GROUPS) as (keyof typeof V1_GROUPS)[]).filter((group) =>
    V1_GROUPS[group].every((interaction) => allowed.includes(interaction)),
  )
  return whole.length === 2 ? '*' : whole[0]
}

/**
 * What one requested resource scope of `level` grants an account: a supported scope whose every
 * interaction its roles allow on the type; for `*`, where they allow less on some types, each type
 * by name with what they allow there. Nothing for anything else.
 */
export function grantableScopes(
  scope: string,
  authorities: ReadonlySet<string>,
  fhir: FhirScopeRules,
  level: 'system' | 'user' | 'patient' = 'system',
): string[] {
  const parsed = parseSmartScope(scope)
  if (parsed?.level !== level) return []
  const asked = SCOPE_INTERACTIONS.filter((interaction) => parsed[interaction])
  const allowedOn = (type: string) =>
    asked.filter((interaction) => fhir.allows(authorities, type, interaction))
  const all = (type: string) => allowedOn(type).length === asked.length
  if (parsed.type !== '*') return fhir.types.includes(parsed.type) && all(parsed.type) ? [scope] : []
  if (fhir.types.every(all)) return [scope]
  const access = scope.slice(scope.indexOf('.') + 1)
  const query = access.includes('?') ? access.slice(access.indexOf('?')) : ''
  const v1 = /^(read|write|\*)(\?|$)/.test(access)
  return fhir.types.flatMap((type) => {
    const permissions = permissionsFor(v1, allowedOn(type))
    return permissions ? [`${level}/${type}.${permissions}${query}`] : []
  })
}
