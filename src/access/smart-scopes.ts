/**
 * A SMART on FHIR resource scope: `patient|user|system` / `Type|*` . v1 `read|write|*` or v2 `cruds`
 * (letters in that order), a v2 one optionally followed by a granular `?<parameter>=<value>`.
 */
const SMART_SCOPE = /^(patient|user|system)\/([A-Za-z]+|\*)\.(read|write|\*|c?r?u?d?s?)(?:\?(.*))?$/

/** Anything shaped like a SMART resource scope, whether or not it parses. */
const SMART_SHAPED = /^(patient|user|system)\//

/** The types whose scopes may be narrowed to a category (SMART v2 granular scopes, as US Core uses them). */
const CATEGORY_SCOPED_TYPES: readonly string[] = ['Observation', 'Condition']

export interface SmartScope {
  level: 'patient' | 'user' | 'system'
  type: string
  read: boolean
  search: boolean
  /** Whether it asks to create, update or delete (v1 `write` or `*`, v2 `c`, `u`, `d`). */
  modifies: boolean
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
  // v1: read (or *) covers reading and searching; v2 names them apart (r, s).
  const reads = access === 'read' || access === '*'
  return {
    level,
    type,
    read: reads || (!v1 && access.includes('r')),
    search: reads || (!v1 && access.includes('s')),
    modifies: access === 'write' || access === '*' || (!v1 && /[cud]/.test(access)),
    ...(category === undefined ? {} : { category }),
  }
}
