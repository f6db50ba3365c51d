import type { Parameters } from '@medplum/fhirtypes'
import { AppError } from '../../../errors.js'
import type { FhirResourceType } from '../resource-type.js'
import { COMMON_SEARCH_PARAMETERS } from '../search-conditions.js'
import type { SearchQuery } from '../search-params.js'

/** What a kick-off asks for, checked. */
export interface ExportParameters {
  /** `_type`: the types asked for, or undefined for every type the caller may read. */
  types: string[] | undefined
  /** `_since`: only resources changed at or after this instant. */
  since: Date | undefined
  /** `_typeFilter`: per type, the search (a query string) its resources must match. */
  typeFilters: Record<string, string>
}

const OUTPUT_FORMATS = ['application/fhir+ndjson', 'application/ndjson', 'ndjson']
const SUPPORTED = ['_outputFormat', '_since', '_type', '_typeFilter']
// Parameters of the Bulk Data specification this server does not offer: named, rather than ignored.
const UNSUPPORTED: Record<string, string> = {
  includeAssociatedData: 'associated data (provenance) is not kept',
  _elements: 'exports hold whole resources',
  patient: 'export a Group instead of a list of patients',
  organizeOutputBy: 'output is organized by resource type',
  _until: 'exports run up to their transactionTime',
}
// An instant with a time zone, as FHIR's instant type requires.
const INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/

const invalid = (details: string) =>
  new AppError('VAL_001', details, { status: 400, message: 'Invalid export parameters' })

/** A kick-off's POST body (a FHIR Parameters resource) as the same lists of values as a query. */
export function parametersOf(body: unknown): SearchQuery {
  const resource = body as Parameters | undefined
  if (resource?.resourceType !== 'Parameters') {
    throw invalid('A POST kick-off takes a FHIR Parameters resource (or none)')
  }
  const query: SearchQuery = {}
  for (const parameter of resource.parameter ?? []) {
    const value =
      parameter.valueString ?? parameter.valueInstant ?? parameter.valueCode ?? parameter.valueDateTime
    if (!parameter.name || value === undefined) throw invalid('Each parameter needs a name and a value')
    query[parameter.name] = [...(query[parameter.name] ?? []), String(value)]
  }
  return query
}

const listed = (values: string[] | undefined) =>
  (values ?? [])
    .flatMap((value) => value.split(','))
    .map((value) => value.trim())
    .filter(Boolean)

/** Checks a kick-off's parameters against the types served; anything not supported is a 400. */
export function exportParameters(query: SearchQuery, types: readonly FhirResourceType[]): ExportParameters {
  for (const name of Object.keys(query)) {
    if (UNSUPPORTED[name]) throw invalid(`${name} is not supported: ${UNSUPPORTED[name]}`)
    if (!SUPPORTED.includes(name)) throw invalid(`Unknown export parameter ${name}`)
  }
  for (const format of query._outputFormat ?? []) {
    if (!OUTPUT_FORMATS.includes(format)) {
      throw invalid(`_outputFormat ${format} is not offered; use application/fhir+ndjson`)
    }
  }
  const served = new Map<string, FhirResourceType>(types.map((type) => [type.type, type]))
  const asked = query._type ? listed(query._type) : undefined
  const unknown = asked?.filter((name) => !served.has(name)) ?? []
  if (unknown.length > 0) throw invalid(`_type names types not served: ${unknown.join(', ')}`)

  let since: Date | undefined
  if (query._since) {
    const [value = ''] = query._since
    if (query._since.length > 1 || !INSTANT.test(value) || Number.isNaN(Date.parse(value))) {
      throw invalid('_since must be one FHIR instant, e.g. 2024-05-01T00:00:00Z')
    }
    since = new Date(value)
  }

  const typeFilters: Record<string, string> = {}
  for (const filter of query._typeFilter ?? []) {
    const mark = filter.indexOf('?')
    const name = mark < 0 ? filter : filter.slice(0, mark)
    const type = served.get(name)
    if (mark < 0 || !type) throw invalid(`_typeFilter ${filter} is not <Type>?<search> of a type served`)
    if (asked && !asked.includes(name)) throw invalid(`_typeFilter ${filter} names a type _type leaves out`)
    if (typeFilters[name] !== undefined) throw invalid(`Only one _typeFilter per type is supported (${name})`)
    const known = new Set([...COMMON_SEARCH_PARAMETERS, ...type.searchParameters].map((p) => p.name))
    const names = [...new URLSearchParams(filter.slice(mark + 1)).keys()]
    const foreign = names.filter((parameter) => !known.has(parameter))
    if (names.length === 0 || foreign.length > 0) {
      throw invalid(
        `_typeFilter ${filter}: not search parameters of ${name}: ${foreign.join(', ') || '(none)'}`,
      )
    }
    typeFilters[name] = filter.slice(mark + 1)
  }
  return { types: asked, since, typeFilters }
}

/** A stored `_typeFilter` query string as a search. */
export function filterQuery(text: string | undefined): SearchQuery {
  const query: SearchQuery = {}
  for (const [name, value] of new URLSearchParams(text ?? '')) query[name] = [...(query[name] ?? []), value]
  return query
}
