/** A SMART on FHIR scope: `patient|user|system` / `Type|*` . v1 `read|write|*` or v2 `cruds`. */
const SMART_SCOPE = /^(patient|user|system)\/([A-Za-z]+|\*)\.(read|write|\*|c?r?u?d?s?)$/

export interface SmartScope {
  level: 'patient' | 'user' | 'system'
  type: string
  read: boolean
  search: boolean
}

/** The scope, if it is a SMART on FHIR resource scope (either syntax). */
export function parseSmartScope(scope: string): SmartScope | undefined {
  const match = SMART_SCOPE.exec(scope)
  if (!match) return undefined
  const [, level, type, access] = match as unknown as [string, SmartScope['level'], string, string]
  // v1: read (or *) covers reading and searching; v2 names them apart (r, s).
  const v1 = access === 'read' || access === '*'
  return { level, type, read: v1 || access.includes('r'), search: v1 || access.includes('s') }
}
