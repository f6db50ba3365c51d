/**
 * A SMART on FHIR resource scope: `patient|user|system` / `Type|*` . v1 `read|write|*` or v2 `cruds`
 * (letters in that order), a v2 one optionally followed by a granular `?<parameter>=<value>`.
 */
const SMART_SCOPE = /^(patient|user|system)\/([A-Za-z]+|\*)\.(read|write|\*|c?r?u?d?s?)(?:\?(.*))?$/

/** Anything shaped like a SMART resource scope, whether or not it parses. */
const SMART_SHAPED = /^(patient|user|system)\//

/** The types whose scopes may be narrowed to a category (SMART v2 granular scopes, as US Core uses them). */
const CATEGORY_SCOPED_TYPES: readonly string[] = ['Observation', 'Condition', 'DiagnosticReport']

/** What a SMART scope may allow on a resource type: v2's letters, which v1's `read` and `write` group. */
export const SCOPE_INTERACTIONS = ['create', 'read', 'update', 'delete', 'search'] as const
export type ScopeInteraction = (typeof SCOPE_INTERACTIONS)[number]

export interface SmartScope extends Record<ScopeInteraction, boolean> {
  level: 'patient' | 'user' | 'system'
  type: string
  /** A granular scope's category, as a token (`system|code` or `code`): only resources of that category. */
  category?: string
}

/** Whether a scope claims to be a SMART resource scope: one of these that does not parse must grant nothing. */
export const isSmartShaped = (scope: string) => SMART_SHAPED.test(scope)

/**
 * The category of a granular scope's `?category=<token>`, or undefined for any other query: one
 * parameter, one token (no comma: a scope names one category; several scopes name several).
 */
function categoryOf(query: string): string | undefined {
  const parameters = [...new URLSearchParams(query)]
  const [name, value] = parameters[0] ?? []
  if (parameters.length !== 1 || name !== 'category' || value === undefined) return undefined
  return /^[^,|]*\|?[^,|]+$/.test(value) ? value : undefined
}

/** The scope, if it is a SMART on FHIR resource scope (either syntax) this service understands. */
export function parseSmartScope(scope: string): SmartScope | undefined {
  const match = SMART_SCOPE.exec(scope)
  if (!match) return undefined
  const [, level, type, access, query] = match as unknown as [
    string,
    SmartScope['level'],
    string,
    string,
    string | undefined,
  ]
  if (access === '') return undefined
  const v1 = access === 'read' || access === 'write' || access === '*'
  let category: string | undefined
  if (query !== undefined) {
    // Granular scopes are v2 only, and here only a category of the types that have one.
    if (v1 || !CATEGORY_SCOPED_TYPES.includes(type)) return undefined
    category = categoryOf(query)
    if (category === undefined) return undefined
  }
  // v1: read covers reading and searching, write creating, updating and deleting, * all five; v2
  // names each by its letter.
  const reads = access === 'read' || access === '*'
  const writes = access === 'write' || access === '*'
  const v2 = (letter: string) => !v1 && access.includes(letter)
  return {
    level,
    type,
    create: writes || v2('c'),
    read: reads || v2('r'),
    update: writes || v2('u'),
    delete: writes || v2('d'),
    search: reads || v2('s'),
    ...(category === undefined ? {} : { category }),
  }
}
