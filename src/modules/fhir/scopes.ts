import { parseSmartScope } from '../../access/smart-scopes.js'
import type { Principal } from '../../identity/principal.js'

/** What the token's scopes let it do with one resource type. */
export type ScopeGrant = { allowed: false; reason: string } | { allowed: true; patient: string | undefined }

/**
 * SMART scopes narrow a token on top of its roles. A token with no SMART scope at all (a staff
 * sign-in) is not narrowed. A grant by `patient/` scopes only keeps the token to the compartment
 * of its launch patient.
 */
export function scopeGrant(principal: Principal, type: string, interaction: 'read' | 'search'): ScopeGrant {
  const smart = principal.scopes.map(parseSmartScope).filter((scope) => scope !== undefined)
  if (smart.length === 0) return { allowed: true, patient: undefined }
  const granting = smart.filter((scope) => (scope.type === '*' || scope.type === type) && scope[interaction])
  if (granting.length === 0) {
    return { allowed: false, reason: `The token's scopes do not allow ${interaction} of ${type}` }
  }
  if (granting.some((scope) => scope.level !== 'patient')) return { allowed: true, patient: undefined }
  if (!principal.launchPatient) {
    return { allowed: false, reason: 'patient/ scopes need a patient launch context in the token' }
  }
  return { allowed: true, patient: principal.launchPatient }
}
