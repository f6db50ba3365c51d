import { type SelectQueryBuilder, sql } from 'kysely'
import { acrossOrganizations } from '../../db/across-organizations.js'
import type { Database, Db } from '../../db/database.js'
import type { Tombstone } from '../../schemas/common.js'

/**
 * A place in a list ordered by (change time, id). The time keeps PostgreSQL's microseconds (as
 * RFC 3339 text), which a JavaScript Date would round away, so no row is skipped or read twice.
 */
export interface SyncPosition {
  time: string
  id: number
}

/** One sync page to read: the rows after `after`, at most `size` of them. */
export interface SyncRead {
  after: SyncPosition
  size: number
}

/** A sync page read: its records, tombstones, the position after the last one, whether more follow. */
export interface SyncResult<T> {
  items: T[]
  deleted: Tombstone[]
  next: SyncPosition
  more: boolean
}

/** The row's position: its change time as exact UTC text. */
const positionTime = (column: string) =>
  sql<string>`to_char(${sql.ref(column)} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`

/**
 * The rows of `query` (already filtered to one organization) after the position, in (time, id)
 * order, one more than the page holds to tell whether another page follows. Keyset paging on
 * the (organization_id, updated_at, id) index: page 10,000 costs what page 1 does.
 */
export function syncRows<O>(
  // biome-ignore lint/suspicious/noExplicitAny: any table set; the caller has built its FROM and WHERE
  query: SelectQueryBuilder<Database, any, O>,
  { time, id }: { time: string; id: string },
  { after, size }: SyncRead,
): Promise<(O & { sync_time: string })[]> {
  return query
    .clearOrderBy()
    .select(positionTime(time).as('sync_time'))
    .where(sql<boolean>`(${sql.ref(time)}, ${sql.ref(id)}) > (${after.time}::timestamptz, ${after.id})`)
    .orderBy(sql.ref(time))
    .orderBy(sql.ref(id))
    .limit(size + 1)
    .execute() as Promise<(O & { sync_time: string })[]>
}

/** Tombstones of one kind of record after the position, scoped like the list (to a patient, say). */
export async function syncTombstones(
  db: Db,
  scope: { organizationId: number; resourceType: string; patientId?: number },
  { after, size }: SyncRead,
): Promise<{ item: Tombstone; position: SyncPosition }[]> {
  let query = db
    .selectFrom('deleted_records')
    .select(['record_id', 'deleted_at', positionTime('deleted_at').as('sync_time')])
    .where('organization_id', '=', scope.organizationId)
    .where('resource_type', '=', scope.resourceType)
    .where(sql<boolean>`(deleted_at, record_id) > (${after.time}::timestamptz, ${after.id})`)
  if (scope.patientId !== undefined) query = query.where('patient_id', '=', scope.patientId)
  const rows = await query
    .orderBy('deleted_at')
    .orderBy('record_id')
    .limit(size + 1)
    .execute()
  return rows.map((row) => ({
    item: { id: row.record_id, deleted: true as const, deletedAt: row.deleted_at.toISOString() },
    position: { time: row.sync_time, id: row.record_id },
  }))
}

/** Removes tombstones older than the retention; a sync client away longer must start again from zero. */
export async function purgeTombstones(db: Db, retentionDays: number, now = new Date()): Promise<number> {
  const result = await db
    .deleteFrom('deleted_records')
    .where('deleted_at', '<', new Date(now.getTime() - retentionDays * 86_400_000))
    .modifyEnd(acrossOrganizations('housekeeping'))
    .executeTakeFirst()
  return Number(result.numDeletedRows)
}

const before = (a: SyncPosition, b: SyncPosition) => a.time < b.time || (a.time === b.time && a.id < b.id)

/**
 * One sync page from the list's rows and, for records that can be removed, its tombstones: both
 * streams are in position order, so the page is the first `size` of their merge.
 */
export function syncPage<R extends { sync_time: string; id: number }, T>(
  rows: R[],
  map: (row: R) => T,
  read: SyncRead,
  tombstones: { item: Tombstone; position: SyncPosition }[] = [],
): SyncResult<T> {
  const merged = [
    ...rows.map((row) => ({ row, position: { time: row.sync_time, id: row.id } })),
    ...tombstones.map(({ item, position }) => ({ tombstone: item, position })),
  ].sort((a, b) => (before(a.position, b.position) ? -1 : before(b.position, a.position) ? 1 : 0))
  const page = merged.slice(0, read.size)
  return {
    items: page.flatMap((entry) => ('row' in entry ? [map(entry.row)] : [])),
    deleted: page.flatMap((entry) => ('tombstone' in entry ? [entry.tombstone] : [])),
    next: page.at(-1)?.position ?? read.after,
    more: merged.length > read.size,
  }
}
