import type { CodeableConcept, Resource } from '@medplum/fhirtypes'
import {
  isSmartShaped,
  parseSmartScope,
  type ScopeInteraction,
  type SmartScope,
} from '../../access/smart-scopes.js'
import { forbidden } from '../../errors.js'
import type { Principal } from '../../identity/principal.js'
import type { ReadScope } from './resource-type.js'
import { parseToken, type SearchQuery } from './search-params.js'

/** What the token's scopes let it do with one resource type. */
export type ScopeGrant =
  | { allowed: false; reason: string }
  | {
      allowed: true
      patient: string | undefined
      /** Only resources of one of these categories (tokens), from granular scopes; undefined: any. */
      categories: readonly string[] | undefined
    }

const UNNARROWED: ScopeGrant = { allowed: true, patient: undefined, categories: undefined }

/**
 * SMART scopes narrow a token on top of its roles. A token with nothing shaped like a SMART
 * resource scope (a staff sign-in) is not narrowed. Any other is limited to what the scopes it
 * carries and this service understands grant: a scope that does not parse grants nothing, so a
 * token whose SMART scopes all fail to parse reads nothing. A grant by `patient/` scopes only keeps
 * the token to the compartment of its launch patient; granular scopes keep it to their categories.
 * A patient's own account is kept to its own compartment whatever its scopes (Principal.patientAccount).
 */
export function scopeGrant(principal: Principal, type: string, interaction: ScopeInteraction): ScopeGrant {
  const grant = grantOfScopes(principal, type, interaction)
  if (!principal.patientAccount || !grant.allowed) return grant
  // A patient's own account is kept to its own compartment whatever its scopes say (a password-grant
  // token has none, a user/ scope would be wider): exactly as a patient/ scope with its launch patient.
  if (!principal.launchPatient) {
    return { allowed: false, reason: 'The patient account is linked to no patient record' }
  }
  return { ...grant, patient: principal.launchPatient }
}

function grantOfScopes(principal: Principal, type: string, interaction: ScopeInteraction): ScopeGrant {
  const shaped = principal.scopes.filter(isSmartShaped)
  if (shaped.length === 0) return UNNARROWED
  const granting = shaped
    .map(parseSmartScope)
    .filter((scope) => scope !== undefined)
    .filter((scope) => (scope.type === '*' || scope.type === type) && scope[interaction])
  if (granting.length === 0) {
    return { allowed: false, reason: `The token's scopes do not allow ${interaction} of ${type}` }
  }
  // Grants of several levels are not merged: user/ and system/ ones alone when there are any. That
  // may grant less than the union of the scopes (a patient/ scope's wider categories), never more.
  const wide = granting.filter((scope) => scope.level !== 'patient')
  if (wide.length > 0) return { allowed: true, patient: undefined, categories: categoriesOf(wide) }
  if (!principal.launchPatient) {
    return { allowed: false, reason: 'patient/ scopes need a patient launch context in the token' }
  }
  return { allowed: true, patient: principal.launchPatient, categories: categoriesOf(granting) }
}

function categoriesOf(scopes: SmartScope[]): readonly string[] | undefined {
  if (scopes.some((scope) => scope.category === undefined)) return undefined
  return [...new Set(scopes.map((scope) => scope.category as string))]
}

/** The search kept to the granted categories: one more `category` occurrence, which every match must meet. */
export function withinCategories(query: SearchQuery, categories: readonly string[] | undefined): SearchQuery {
  if (categories === undefined) return query
  return { ...query, category: [...(query.category ?? []), categories.join(',')] }
}

/** Whether a coding list holds the token (`system|code`, `|code` for no system, or `code` of any system). */
function holds(concepts: CodeableConcept[], token: string): boolean {
  const { system, code } = parseToken(token)
  return concepts.some((concept) =>
    (concept.coding ?? []).some(
      (coding) =>
        coding.code === code &&
        (system === undefined || (system === '' ? coding.system === undefined : coding.system === system)),
    ),
  )
}

/** Whether a resource is in one of the granted categories (all are, when the scopes name none). */
export function inCategories(resource: Resource, categories: readonly string[] | undefined): boolean {
  if (categories === undefined) return true
  const category = (resource as { category?: CodeableConcept | CodeableConcept[] }).category
  const concepts = category === undefined ? [] : Array.isArray(category) ? category : [category]
  return categories.some((token) => holds(concepts, token))
}

/** A resource read by id or included is refused when it is in none of the granted categories. */
export function checkCategories(resource: Resource, categories: readonly string[] | undefined): void {
  if (!inCategories(resource, categories)) {
    throw forbidden(`The token's scopes do not allow reading this ${resource.resourceType}'s category`)
  }
}

/** A record read by id is refused when the token is kept to its launch patient and the record is another's. */
export function checkLaunchPatient(scope: ReadScope, patientId: number): void {
  if (scope.patient !== undefined && patientId !== scope.patient) {
    throw forbidden('The token is limited to another patient’s records')
  }
}
