import {
  type Expression,
  type ExpressionBuilder,
  type RawBuilder,
  type SelectQueryBuilder,
  type SqlBool,
  sql,
} from 'kysely'
import type { ReadScope } from './resource-type.js'
import {
  occurrences,
  type PageRequest,
  parseDate,
  parseToken,
  recordIds,
  referencedIds,
  type SearchPage,
  type SearchQuery,
} from './search-params.js'

/**
 * The object without its undefined members, or undefined when none is left: FHIR forbids empty
 * objects and arrays, so absent parts are left out rather than sent empty.
 */
export function present<T extends object>(value: T): T | undefined {
  const entries = Object.entries(value).filter(([, member]) => member !== undefined)
  return entries.length > 0 ? (Object.fromEntries(entries) as T) : undefined
}

const escapeLike = (text: string) => text.replace(/[\\%_]/g, (c) => `\\${c}`)

/** A FHIR string search: the value starts the text, case-insensitively. */
export function stringCondition(
  // biome-ignore lint/suspicious/noExplicitAny: any table set
  eb: ExpressionBuilder<any, any>,
  lowered: Expression<string | null>,
  value: string,
): Expression<SqlBool> {
  return eb(lowered, 'like', `${escapeLike(value.toLowerCase())}%`)
}

/**
 * A FHIR date search on a column: `date` columns compare calendar dates, `instant` columns
 * (timestamptz) compare instants; the value's precision decides the range it stands for.
 */
export function dateCondition(
  // biome-ignore lint/suspicious/noExplicitAny: any table set
  eb: ExpressionBuilder<any, any>,
  column: string,
  value: string,
  kind: 'date' | 'instant',
): Expression<SqlBool> {
  const range = parseDate(value)
  const [start, end] = kind === 'date' ? [range.startDate, range.endDate] : [range.start, range.end]
  const ref = eb.ref(column)
  const cast = (text: string) => (kind === 'date' ? sql`${text}::date` : sql`${text}::timestamptz`)
  switch (range.comparator) {
    case 'gt':
      return eb(ref, '>=', cast(end))
    case 'ge':
      return eb(ref, '>=', cast(start))
    case 'lt':
      return eb(ref, '<', cast(start))
    case 'le':
      return eb(ref, '<', cast(end))
    case 'ne':
      return eb.or([eb(ref, '<', cast(start)), eb(ref, '>=', cast(end))])
    default:
      return eb.and([eb(ref, '>=', cast(start)), eb(ref, '<', cast(end))])
  }
}

/** The codes of token values that can match identifiers of `system` (any system, or that one). */
export function tokenValues(values: string[], system: string): string[] {
  return values
    .map(parseToken)
    .filter((token) => token.code !== undefined && (token.system === undefined || token.system === system))
    .map((token) => token.code as string)
}

/**
 * Records whose `column` is one of `values`. No values (search values that name nothing, such as a
 * reference to another type) match nothing, rather than making an empty `in ()`.
 */
// biome-ignore lint/suspicious/noExplicitAny: any table set
export function whereOneOf<Q extends SelectQueryBuilder<any, any, any>>(
  query: Q,
  column: string,
  values: readonly (string | number)[],
): Q {
  return (
    values.length > 0 ? query.where(sql.ref(column), 'in', values) : query.where(sql<boolean>`false`)
  ) as Q
}

/** Records of the scope's compartments only: its launch patient, or a provider's patients. */
// biome-ignore lint/suspicious/noExplicitAny: any table set
export function inCompartment<Q extends SelectQueryBuilder<any, any, any>>(
  query: Q,
  scope: ReadScope,
  patientColumn: string,
): Q {
  let result = query
  if (scope.patient !== undefined) result = result.where(sql.ref(patientColumn), '=', scope.patient) as Q
  if (scope.providerPatients !== undefined) {
    result = result.where(
      sql.ref(patientColumn),
      'in',
      sql`(select patient_id from appointments where organization_id = ${scope.actor.organizationId} and provider_id = ${scope.providerPatients})`,
    ) as Q
  }
  return result
}

/** The search parameters every type takes, declared once for the CapabilityStatement. */
export const COMMON_SEARCH_PARAMETERS = [
  { name: '_id', type: 'token', documentation: 'Logical id' },
  {
    name: '_lastUpdated',
    type: 'date',
    documentation: 'When the record last changed (prefixes eq, ne, gt, lt, ge, le)',
  },
] as const

/** A reference search parameter to a patient or a practitioner, as types declare it. */
export const referenceParameter = (name: string, target: 'Patient' | 'Practitioner') =>
  ({
    name,
    type: 'reference',
    documentation: `The ${target === 'Patient' ? 'patient' : 'provider'}: \`12\`, \`${target}/12\` or its full URL`,
  }) as const

/** The columns a type's searches filter `_id` and `_lastUpdated` on, page by, and sort by. */
export interface SearchColumns {
  id: string
  updatedAt: string
  /** The type's date-like search parameters `_sort` may name (besides `_lastUpdated`), as SQL. */
  sortDates?: Record<string, string | RawBuilder<unknown>>
}

/** The parameters `_sort` takes on a type: `_id`, `_lastUpdated` and its date-like ones. */
export const sortParameters = (columns: SearchColumns): string[] => [
  '_id',
  '_lastUpdated',
  ...Object.keys(columns.sortDates ?? {}),
]

/** `_id` and `_lastUpdated`, on the query's id and change-time columns. */
// biome-ignore lint/suspicious/noExplicitAny: any table set
export function whereCommon<Q extends SelectQueryBuilder<any, any, any>>(
  query: Q,
  search: SearchQuery,
  columns: SearchColumns,
): Q {
  let result = query
  for (const ids of occurrences(search, '_id')) result = whereOneOf(result, columns.id, recordIds(ids))
  for (const values of occurrences(search, '_lastUpdated')) {
    result = result.where((eb) =>
      eb.or(values.map((value) => dateCondition(eb, columns.updatedAt, value, 'instant'))),
    ) as Q
  }
  return result
}

/** A reference search parameter (`patient=Patient/12`): records whose `column` holds a named id. */
// biome-ignore lint/suspicious/noExplicitAny: any table set
export function whereReferences<Q extends SelectQueryBuilder<any, any, any>>(
  query: Q,
  search: SearchQuery,
  name: string,
  target: string,
  column: string,
): Q {
  let result = query
  for (const values of occurrences(search, name))
    result = whereOneOf(result, column, referencedIds(values, target))
  return result
}

/**
 * The value a `_sort` parameter orders by: its instant in microseconds (date columns count from the
 * start of their day), a whole number that a cursor carries exactly. A record without one sorts
 * after every record with one (before them when descending).
 */
function sortKey(columns: SearchColumns, name: string): RawBuilder<unknown> | undefined {
  if (name === '_id') return undefined
  const column = name === '_lastUpdated' ? columns.updatedAt : columns.sortDates?.[name]
  if (column === undefined) throw new Error(`${name} is not a sort parameter of this type`)
  const value = typeof column === 'string' ? sql.ref(column) : column
  return sql`(extract(epoch from coalesce((${value})::timestamptz, '9999-12-31T23:59:59Z'::timestamptz)) * 1000000)::bigint`
}

/**
 * One page of matches after the position `after`, in the requested order with ties in id order:
 * keyset paging, no deep offsets. The position of the page's last match is where the next starts.
 */
export async function keysetPage<O, R extends { id: string }>(
  // biome-ignore lint/suspicious/noExplicitAny: any table set
  query: SelectQueryBuilder<any, any, O>,
  columns: SearchColumns,
  { after, size, order }: PageRequest,
  map: (row: O) => R,
): Promise<SearchPage<R>> {
  const id = sql.ref(columns.id)
  const key = sortKey(columns, order.name)
  const direction = order.descending ? 'desc' : 'asc'
  const beyond = sql.raw(order.descending ? '<' : '>')
  // biome-ignore lint/suspicious/noExplicitAny: the sort key is one more selected column
  let paged: SelectQueryBuilder<any, any, any> = query
  if (key) paged = paged.select(sql<string>`(${key})::text`.as('sort_key')).orderBy(key, direction)
  if (after) {
    paged = paged.where(
      key
        ? sql<boolean>`(${key}, ${id}) ${beyond} (${after.key}::bigint, ${after.id})`
        : sql<boolean>`${id} ${beyond} ${after.id}`,
    )
  }
  const rows = (await paged
    .orderBy(id, direction)
    .limit(size + 1)
    .execute()) as (O & { sort_key?: string })[]
  const resources = rows.slice(0, size).map(map)
  const last = rows[size - 1]
  const lastResource = resources.at(-1)
  return {
    resources,
    next:
      rows.length > size && last && lastResource
        ? { id: Number(lastResource.id), ...(key ? { key: last.sort_key } : {}) }
        : undefined,
  }
}

/** How many records the query matches, for `_summary=count`. */
// biome-ignore lint/suspicious/noExplicitAny: any table set
export async function countMatches(query: SelectQueryBuilder<any, any, unknown>): Promise<number> {
  const row = await query
    .clearSelect()
    .select(sql<number>`count(*)::int`.as('count'))
    .executeTakeFirstOrThrow()
  return Number(row.count)
}
