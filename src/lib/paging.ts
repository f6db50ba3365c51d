import { type RawBuilder, type SelectQueryBuilder, sql } from 'kysely'
import type { Database, Db } from '../../db/database.js'
import { LIST_PAGING_PARAMETERS, type ListPaging, type PageOf, type PageQuery } from '../../schemas/common.js'
import { AppError } from '../errors.js'

/** The filters of a list query: all of it but its paging parameters. */
export type ListFilters<Q extends PageQuery> = Omit<Q, keyof ListPaging>

const PAGING: ReadonlySet<string> = new Set(LIST_PAGING_PARAMETERS)

/** A list query split into its paging part and its filters. */
export function splitListQuery<Q extends PageQuery>(
  query: Q,
): { paging: ListPaging; filters: ListFilters<Q> } {
  const paging: Record<string, unknown> = {}
  const filters: Record<string, unknown> = {}
  for (const [name, value] of Object.entries(query)) (PAGING.has(name) ? paging : filters)[name] = value
  return { paging: paging as ListPaging, filters: filters as ListFilters<Q> }
}

/** A list's `dateFrom`/`dateTo` filters: a range that ends before it starts is refused with 400. */
export function checkDateRange(filters: { dateFrom?: string; dateTo?: string }): void {
  if (filters.dateFrom && filters.dateTo && filters.dateTo < filters.dateFrom) {
    throw new AppError('VAL_001', 'dateTo must not be before dateFrom', { status: 400 })
  }
}

/** The SQL expression each field a resource's list may be sorted by (`Fields`, its schema's) sorts by. */
export type SortColumns<Fields extends readonly string[]> = Record<Fields[number], string>

export interface SortOrder {
  column: string
  direction: 'asc' | 'desc'
}

/**
 * Resolves `field,asc|desc` against the resource's sortable fields (the query schema has already
 * rejected any other field). The column names come from the map, never from the request.
 */
export function sortOrder<F extends string>(
  sort: string | undefined,
  columns: Record<F, string>,
  fallback: { field: F; direction: 'asc' | 'desc' },
): SortOrder {
  const [field, direction] = (sort ?? '').split(',')
  const column = columns[field as F]
  if (!column) return { column: columns[fallback.field], direction: fallback.direction }
  return { column, direction: direction === 'desc' ? 'desc' : 'asc' }
}

/**
 * The ORDER BY expression of a resolved sort, with the id as tie-breaker in the same direction so
 * that rows of equal sort value keep one order and pages never overlap. Raw SQL is safe here: the
 * column comes from the resource's map (see sortOrder), never from the request.
 */
export function orderByExpression(sort: SortOrder): RawBuilder<unknown> {
  return sql.raw(`${sort.column} ${sort.direction}, id ${sort.direction}`)
}

/**
 * Runs a filtered, ordered query for one page. The total comes from a window count in the same
 * query; only a page past the end needs a second, counting query.
 */
export async function fetchPage<O>(
  db: Db,
  // biome-ignore lint/suspicious/noExplicitAny: any table set; the caller has built its FROM and WHERE
  query: SelectQueryBuilder<Database, any, O>,
  { page, size }: PageQuery,
): Promise<{ rows: O[]; total: number }> {
  const rows = await query
    .select(sql<number>`count(*) over ()`.as('total_count'))
    .limit(size)
    .offset(page * size)
    .execute()
  const first = rows[0] as (O & { total_count: number }) | undefined
  if (first) return { rows, total: Number(first.total_count) }
  if (page === 0) return { rows: [], total: 0 }
  return { rows: [], total: await countRows(db, query) }
}

/**
 * How many rows a filtered query matches, in a query of its own: it needs no columns but those of
 * the filter, so an index on them answers it without reading the rows.
 */
export async function countRows(
  db: Db,
  // biome-ignore lint/suspicious/noExplicitAny: any table set; the caller has built its FROM and WHERE
  query: SelectQueryBuilder<Database, any, unknown>,
): Promise<number> {
  const counted = await db
    .selectFrom(query.clearOrderBy().as('matching'))
    .select(sql<number>`count(*)::int`.as('count'))
    .executeTakeFirstOrThrow()
  return Number(counted.count)
}

/**
 * One page of rows when the total is known from elsewhere (e.g. maintained counts), so the query
 * need not count every matching row.
 */
export async function fetchPageOfKnownTotal<O>(
  // biome-ignore lint/suspicious/noExplicitAny: any table set; the caller has built its FROM and WHERE
  query: SelectQueryBuilder<Database, any, O>,
  { page, size }: PageQuery,
  total: Promise<number>,
): Promise<{ rows: O[]; total: number }> {
  const [rows, count] = await Promise.all([
    query
      .limit(size)
      .offset(page * size)
      .execute(),
    total,
  ])
  return { rows, total: count }
}

export function toPage<T>(content: T[], total: number, { page, size }: PageQuery): PageOf<T> {
  const totalPages = Math.ceil(total / size)
  return {
    content,
    pageable: { pageNumber: page, pageSize: size },
    totalElements: total,
    totalPages,
    first: page === 0,
    last: page >= totalPages - 1,
  }
}
