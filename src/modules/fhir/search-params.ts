import { AppError } from '../../errors.js'

/** The query of a FHIR search: every parameter with all its values (repeats and commas kept apart). */
export type SearchQuery = Record<string, string[]>

/** The order of a search (`_sort`): a sort parameter's name (`_id` by default) and its direction. */
export interface SearchOrder {
  name: string
  descending: boolean
}

/** Where a page starts: after this match, in the search's order (`key`: its sort value). */
export interface PagePosition {
  id: number
  key?: string
}

export interface PageRequest {
  after: PagePosition | undefined
  size: number
  order: SearchOrder
}

/** One page of matches and, when more follow, where the next page starts. */
export interface SearchPage<R> {
  resources: R[]
  next: PagePosition | undefined
}

const invalid = (details: string) =>
  new AppError('VAL_001', details, { status: 400, message: 'Invalid search parameter' })

/** Fastify's parsed query (a string or an array per name) as a SearchQuery. */
export function searchQueryOf(raw: Record<string, unknown>): SearchQuery {
  const query: SearchQuery = {}
  for (const [name, value] of Object.entries(raw)) {
    const values = (Array.isArray(value) ? value : [value]).map(String)
    query[name] = values
  }
  return query
}

/** The values of a parameter, one list per occurrence (an occurrence's commas mean OR). */
export const occurrences = (query: SearchQuery, name: string): string[][] =>
  (query[name] ?? []).map((value) => value.split(',').filter((part) => part !== ''))

const COMPARATORS = ['eq', 'ne', 'gt', 'lt', 'ge', 'le'] as const
type Comparator = (typeof COMPARATORS)[number]

/** A date search value: its comparator and the instant range its precision covers. */
export interface DateRange {
  comparator: Comparator
  /** The first instant of the value (inclusive) and the first after it (exclusive), ISO. */
  start: string
  end: string
  /** The same range as calendar dates, for date columns. */
  startDate: string
  endDate: string
}

const DATE_VALUE =
  /^(eq|ne|gt|lt|ge|le)?(\d{4})(?:-(\d{2})(?:-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(\.\d+)?)?(Z|[+-]\d{2}:\d{2})?)?)?)?$/

/** `ge2020-01`, `2020-01-01T10:00:00Z`, … as the range of instants the value stands for. */
export function parseDate(text: string): DateRange {
  const match = DATE_VALUE.exec(text)
  if (!match)
    throw invalid(`${text} is not a FHIR date search value ([prefix]YYYY[-MM[-DD[Thh:mm[:ss][Z]]]])`)
  const [, prefix, year, month, day, hour, minute, second, fraction, zone] = match
  const comparator = (prefix ?? 'eq') as Comparator
  let start: Date
  let end: Date
  if (hour !== undefined) {
    // Milliseconds are the finest precision kept: a value with a fraction stands for its millisecond.
    const millis = fraction === undefined ? '' : fraction.slice(0, 4).padEnd(4, '0')
    const iso = `${year}-${month}-${day}T${hour}:${minute}:${second ?? '00'}${millis}${zone ?? 'Z'}`
    start = new Date(iso)
    end = new Date(start.getTime() + (second === undefined ? 60_000 : fraction === undefined ? 1000 : 1))
  } else {
    const y = Number(year)
    const m = month === undefined ? 0 : Number(month) - 1
    const d = day === undefined ? 1 : Number(day)
    start = new Date(Date.UTC(y, m, d))
    end =
      day !== undefined
        ? new Date(Date.UTC(y, m, d + 1))
        : month !== undefined
          ? new Date(Date.UTC(y, m + 1, 1))
          : new Date(Date.UTC(y + 1, 0, 1))
  }
  if (Number.isNaN(start.getTime()) || (day !== undefined && start.getUTCDate() !== Number(day))) {
    throw invalid(`${text} is not a real date`)
  }
  return {
    comparator,
    start: start.toISOString(),
    end: end.toISOString(),
    startDate: start.toISOString().slice(0, 10),
    endDate: end.toISOString().slice(0, 10),
  }
}

/** A token search value: `system|code`, `|code` (no system), `code` (any system) or `system|`. */
export interface Token {
  system: string | undefined
  code: string | undefined
}

export function parseToken(text: string): Token {
  const bar = text.indexOf('|')
  if (bar < 0) return { system: undefined, code: text }
  return { system: text.slice(0, bar), code: text.slice(bar + 1) || undefined }
}

const SUMMARY_VALUES = ['true', 'text', 'data', 'count', 'false']

/**
 * The `_summary` and `_elements` values asked for that are not implemented, as `name=value`: whole
 * resources are returned instead, which FHIR allows (a server is not obliged to subset). A search
 * serves `_summary=count`; `_summary=false` asks for what is returned anyway. A `_summary` that is
 * none of FHIR's values is a 400.
 */
export function unimplementedSubsets(query: SearchQuery, interaction: 'read' | 'search'): string[] {
  const summaries = query._summary ?? []
  const wrong = summaries.find((value) => !SUMMARY_VALUES.includes(value))
  if (wrong !== undefined) throw invalid(`_summary must be one of ${SUMMARY_VALUES.join(', ')}, not ${wrong}`)
  const served = interaction === 'search' ? ['count', 'false'] : ['false']
  return [
    ...summaries.filter((value) => !served.includes(value)).map((value) => `_summary=${value}`),
    ...(query._elements ?? []).map((value) => `_elements=${value}`),
  ]
}

const PAGE_SIZE_DEFAULT = 20
export const PAGE_SIZE_MAX = 100

/** `_count`: how many matches a page holds (0: only the total). */
export function pageSize(query: SearchQuery): number {
  const [value] = query._count ?? []
  if (value === undefined) return PAGE_SIZE_DEFAULT
  const count = Number(value)
  if (!Number.isInteger(count) || count < 0) throw invalid('_count must be a whole number of at least 0')
  return Math.min(count, PAGE_SIZE_MAX)
}

/** `_page`: which page of an instance's history (0 first), `_count` versions each. */
export function historyPage(query: SearchQuery): { page: number; size: number } {
  const [value = '0'] = query._page ?? []
  const page = Number(value)
  if (!/^[0-9]{1,7}$/.test(value)) throw invalid('_page must be a whole number of at least 0')
  return { page, size: pageSize(query) }
}

/** `_sort`: one of the type's sort parameters, `-` first for descending; by id when absent. */
export function searchOrder(query: SearchQuery, sortable: readonly string[]): SearchOrder | undefined {
  const [value] = query._sort ?? []
  if (value === undefined) return { name: '_id', descending: false }
  const descending = value.startsWith('-')
  const name = descending ? value.slice(1) : value
  return query._sort?.length === 1 && sortable.includes(name) ? { name, descending } : undefined
}

const orderText = (order: SearchOrder) => `${order.descending ? '-' : ''}${order.name}`

/** `_cursor`: where the page starts (the service's own keyset link, made for the same order). */
export function cursorAfter(query: SearchQuery, order: SearchOrder): PagePosition | undefined {
  const [value] = query._cursor ?? []
  if (value === undefined) return undefined
  let parts: unknown
  try {
    parts = JSON.parse(Buffer.from(value, 'base64url').toString('utf8'))
  } catch {
    parts = undefined
  }
  const [sort, id, key] = Array.isArray(parts) ? parts : []
  const keyed = order.name !== '_id'
  if (
    sort !== orderText(order) ||
    !Number.isSafeInteger(id) ||
    id < 0 ||
    (keyed ? !(typeof key === 'string' && /^-?[0-9]{1,18}$/.test(key)) : key !== undefined)
  ) {
    throw invalid('_cursor is not a link this server made for this search')
  }
  return keyed ? { id, key } : { id }
}

export const cursorFor = (position: PagePosition, order: SearchOrder) =>
  Buffer.from(
    JSON.stringify([orderText(order), position.id, ...(position.key === undefined ? [] : [position.key])]),
  ).toString('base64url')

/**
 * The id a reference search value names for `type`: `123`, `Patient/123` or an absolute URL ending
 * in `Patient/123`. Undefined when it names another type or no numeric id (it matches nothing).
 */
function referenceId(value: string, type: string): number | undefined {
  const match = new RegExp(`^(?:.*/)?(?:${type}/)?([1-9][0-9]{0,9})$`).exec(value)
  if (!match || (value.includes('/') && !value.includes(`${type}/`))) return undefined
  const id = Number(match[1])
  return id <= 2_147_483_647 ? id : undefined
}

/** The ids reference values name for `type` (a value naming another type or no id is left out). */
export const referencedIds = (values: string[], type: string): number[] =>
  values.map((value) => referenceId(value, type)).filter((id) => id !== undefined)

/** The numeric record ids among `_id` values (others name no record here). */
export const recordIds = (values: string[]): number[] =>
  values
    .filter((value) => /^[1-9][0-9]{0,9}$/.test(value))
    .map(Number)
    .filter((id) => id <= 2_147_483_647)
