import {
  type Expression,
  type ExpressionBuilder,
  type RawBuilder,
  type SelectQueryBuilder,
  type SqlBool,
  sql,
} from 'kysely'
import type { ReadScope, SearchParameterDefinition } from './resource-type.js'
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

// biome-ignore lint/suspicious/noExplicitAny: any table set
export type AnyQuery = SelectQueryBuilder<any, any, any>

/** The condition no record meets. */
export const nothing = sql<boolean>`false`

const escapeLike = (text: string) => text.replace(/[\\%_]/g, (c) => `\\${c}`)

/** A FHIR string search: the value starts the text, case-insensitively. */
function stringCondition(
  // biome-ignore lint/suspicious/noExplicitAny: any table set
  eb: ExpressionBuilder<any, any>,
  lowered: Expression<string | null>,
  value: string,
): Expression<SqlBool> {
  return eb(lowered, 'like', `${escapeLike(value.toLowerCase())}%`)
}

/** A column by name, or SQL standing for one. */
type ColumnOrSql = string | RawBuilder<unknown>

/**
 * A FHIR date search on a column: `date` columns compare calendar dates, `instant` columns
 * (timestamptz) compare instants; the value's precision decides the range it stands for.
 */
function dateCondition(
  // biome-ignore lint/suspicious/noExplicitAny: any table set
  eb: ExpressionBuilder<any, any>,
  column: ColumnOrSql,
  value: string,
  kind: 'date' | 'instant',
): Expression<SqlBool> {
  const range = parseDate(value)
  const [start, end] = kind === 'date' ? [range.startDate, range.endDate] : [range.start, range.end]
  const ref = typeof column === 'string' ? eb.ref(column) : column
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
 * What a code table holds for a code a client sent: only the table's own entries, so that a code
 * such as `constructor` names nothing rather than something every object inherits.
 */
export function ownEntry<V>(table: Readonly<Record<string, V>>, code: string): V | undefined {
  return Object.hasOwn(table, code) ? table[code] : undefined
}

/** Ours for each FHIR code, of a table of the FHIR code for each of ours (one may stand for several). */
export function inverse(table: Record<string, string>): Record<string, string[]> {
  const ours: Record<string, string[]> = {}
  for (const [value, code] of Object.entries(table)) ours[code] = [...(ours[code] ?? []), value]
  return ours
}

/**
 * Records whose `column` is one of `values`. No values (search values that name nothing, such as a
 * reference to another type) match nothing, rather than making an empty `in ()`.
 */
function whereOneOf<Q extends AnyQuery>(
  query: Q,
  column: ColumnOrSql,
  values: readonly (string | number)[],
): Q {
  if (values.length === 0) return query.where(nothing) as Q
  return query.where(typeof column === 'string' ? sql.ref(column) : column, 'in', values) as Q
}

/** Records whose date (or instant) in `column` falls in the range of one of the values. */
function whereAnyDate<Q extends AnyQuery>(
  query: Q,
  column: ColumnOrSql,
  values: string[],
  kind: 'date' | 'instant',
): Q {
  return query.where((eb) => eb.or(values.map((value) => dateCondition(eb, column, value, kind)))) as Q
}

/** Records of the scope's compartments only: its launch patient, or a provider's patients. */
export function inCompartment<Q extends AnyQuery>(query: Q, scope: ReadScope, patientColumn: string): Q {
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

/**
 * A search parameter of a type: as the CapabilityStatement declares it, and the condition one
 * occurrence of it puts on the type's query (records matching any of the occurrence's values).
 */
export interface SearchParameter<Q extends AnyQuery = AnyQuery> extends SearchParameterDefinition {
  /** `search`: the whole search, for a parameter whose meaning another one sets. */
  where(query: Q, values: string[], search: SearchQuery): Q
}

const REFERENCE_TARGETS = { Patient: 'patient', Practitioner: 'provider', Encounter: 'encounter' } as const

/** A reference search parameter to a patient, a practitioner or an encounter: records whose `column` holds an id named. */
export const referenceParameter = (
  name: string,
  target: keyof typeof REFERENCE_TARGETS,
  column: string,
): SearchParameter => ({
  name,
  type: 'reference',
  documentation: `The ${REFERENCE_TARGETS[target]}: \`12\`, \`${target}/12\` or its full URL`,
  where: (query, values) => whereOneOf(query, column, referencedIds(values, target)),
})

/** How the values of a token search parameter name the codes a column stores. */
interface TokenCodes {
  /** The code system of the values' codes (`code` or `system|code`); none: each value is a code as it is. */
  system?: string
  /** The stored codes each FHIR code stands for; none: the column stores the FHIR codes. */
  ours?: Record<string, string | readonly string[]>
}

/** A token search parameter: records whose `column` holds a code the values name. */
export const tokenParameter = (
  name: string,
  documentation: string,
  column: ColumnOrSql,
  { system, ours }: TokenCodes,
): SearchParameter => ({
  name,
  type: 'token',
  documentation,
  where(query, values) {
    const codes = system === undefined ? values : tokenValues(values, system)
    return whereOneOf(query, column, ours ? codes.flatMap((code) => ownEntry(ours, code) ?? []) : codes)
  },
})

/** A string search parameter: records a value starts one of the `columns` of, case-insensitively. */
export const stringParameter = (
  name: string,
  documentation: string,
  columns: readonly string[],
): SearchParameter => ({
  name,
  type: 'string',
  documentation,
  where: (query, values) =>
    query.where((eb) =>
      eb.or(
        values.flatMap((value) =>
          columns.map((column) => stringCondition(eb, eb.fn('lower', [eb.ref(column)]), value)),
        ),
      ),
    ),
})

/** A date search parameter on a `date` or an `instant` column; each takes the comparison prefixes. */
export const dateParameter = (
  name: string,
  documentation: string,
  column: ColumnOrSql,
  kind: 'date' | 'instant',
): SearchParameter => ({
  name,
  type: 'date',
  documentation: `${documentation} (prefixes eq, ne, gt, lt, ge, le)`,
  where: (query, values) => whereAnyDate(query, column, values, kind),
})

/** The columns a type's searches filter `_id` and `_lastUpdated` on, page by, and sort by. */
export interface SearchColumns {
  id: string
  updatedAt: string
  /** The type's date-like search parameters `_sort` may name (besides `_lastUpdated`), as SQL. */
  sortDates?: Record<string, ColumnOrSql>
}

/** The parameters `_sort` takes on a type: `_id`, `_lastUpdated` and its date-like ones. */
export const sortParameters = (columns: SearchColumns): string[] => [
  '_id',
  '_lastUpdated',
  ...Object.keys(columns.sortDates ?? {}),
]

/** `_id` and `_lastUpdated`, on the query's id and change-time columns. */
export function whereCommon<Q extends AnyQuery>(query: Q, search: SearchQuery, columns: SearchColumns): Q {
  let result = query
  for (const ids of occurrences(search, '_id')) result = whereOneOf(result, columns.id, recordIds(ids))
  for (const values of occurrences(search, '_lastUpdated')) {
    result = whereAnyDate(result, columns.updatedAt, values, 'instant')
  }
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
