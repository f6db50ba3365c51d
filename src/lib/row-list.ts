import type { SelectQueryBuilder } from 'kysely'
import type { Database, Db } from '../../db/database.js'
import type { PageOf, PageQuery, Tombstone } from '../../schemas/common.js'
import { fetchPage, orderByExpression, type SortOrder, toPage } from './paging.js'
import {
  type SyncPosition,
  type SyncRead,
  type SyncResult,
  syncPage,
  syncRows,
  syncTombstones,
} from './sync-paging.js'

/** The rows of a list, read either way: an offset page, or the changes after a sync position. */
export interface RowList<O> {
  /** One page in the given order, with the number of rows the list holds. */
  page(sort: SortOrder, paging: PageQuery): Promise<{ rows: O[]; total: number }>
  /** The rows changed after the position, and the tombstones of rows removed since (if they can be). */
  changes(read: SyncRead): Promise<{
    rows: (O & { sync_time: string })[]
    tombstones: { item: Tombstone; position: SyncPosition }[]
  }>
}

/**
 * The rows of a list from its filtered query (FROM and WHERE, already confined to one
 * organization): pages ordered by the sort with the id as tie-breaker, sync pages by (updated_at,
 * id) unless `position` names other columns. `tombstones` says which removed records a sync page
 * reports, for records that can be removed.
 */
export function rowList<O>(
  db: Db,
  // biome-ignore lint/suspicious/noExplicitAny: any table set; the caller has built its FROM and WHERE
  query: SelectQueryBuilder<Database, any, O>,
  options: {
    position?: { time: string; id: string }
    tombstones?: Parameters<typeof syncTombstones>[1]
  } = {},
): RowList<O> {
  const { position = { time: 'updated_at', id: 'id' }, tombstones } = options
  return {
    page: (sort, paging) => fetchPage(db, query.orderBy(orderByExpression(sort)), paging),
    async changes(read) {
      const [rows, removed] = await Promise.all([
        syncRows(query, position, read),
        tombstones ? syncTombstones(db, tombstones, read) : [],
      ])
      return { rows, tombstones: removed }
    },
  }
}

/** The records of a list as the API pages them: an offset page, or a sync page after a position. */
export interface RecordList<T> {
  page(): Promise<PageOf<T>>
  changes(read: SyncRead): Promise<SyncResult<T>>
}

/**
 * The records a list query asks for: its rows, the page and order it asks for, and how rows become
 * records (at once for a page, so that what records gather from other tables is read in one go).
 */
export function recordList<O extends { id: number }, T>(
  rows: RowList<O>,
  paging: PageQuery,
  sort: SortOrder,
  toRecords: (rows: O[]) => T[] | Promise<T[]>,
): RecordList<T> {
  return {
    async page() {
      const found = await rows.page(sort, paging)
      return toPage(await toRecords(found.rows), found.total, paging)
    },
    async changes(read) {
      const changed = await rows.changes(read)
      const page = syncPage(changed.rows, (row) => row, read, changed.tombstones)
      return { ...page, items: await toRecords(page.items) }
    },
  }
}

/**
 * Rows to records that carry what `lookup` reads for all the rows at once, by their ids (say, each
 * encounter's addenda).
 */
export function withLookup<O extends { id: number }, L, T>(
  lookup: (ids: number[]) => Promise<L>,
  toRecord: (row: O, found: L) => T,
): (rows: O[]) => Promise<T[]> {
  return async (rows) => {
    const found = await lookup(rows.map((row) => row.id))
    return rows.map((row) => toRecord(row, found))
  }
}
