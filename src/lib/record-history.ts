import { type Selectable, sql } from 'kysely'
import type { Database, Db } from '../../db/database.js'
import type { PageQuery } from '../../schemas/common.js'

/**
 * The tables whose rows carry a version the database keeps (migration 0016); the versions a row
 * leaves behind are kept in record_history (migration 0027).
 */
export type VersionedTable =
  | 'patients'
  | 'providers'
  | 'appointments'
  | 'encounters'
  | 'clinical_records'
  | 'invoices'
  | 'messages'
  | 'webhooks'
  | 'documents'

type RowOf<T extends VersionedTable> = Selectable<Database[T]>

/**
 * A version of a record as its table's row; when it stopped being current (null: it still is), and
 * whether the record was then removed (deleted, as a webhook is), this being its last version.
 */
export type RecordVersion<T extends VersionedTable> = RowOf<T> & {
  replaced_at: Date | null
  removed: boolean
}

/**
 * Every version of one record, the current one and those kept, newest first: a kept version reads
 * back as a row of the table as it is now (a column added since it was kept is null, and so is one
 * the table's history leaves out: a webhook's secrets, migration 0027). Versions
 * replaced before the history was kept (before migration 0027) are not there.
 */
function versionsOf<T extends VersionedTable>(table: T, organizationId: number, id: number) {
  return sql<RecordVersion<T>>`
    select current.*, null::timestamptz as replaced_at, false as removed
    from ${sql.table(table)} as current
    where current.organization_id = ${organizationId} and current.id = ${id}
    union all
    select (jsonb_populate_record(null::${sql.table(table)}, kept.row)).*, kept.ended_at, kept.removed
    from record_history as kept
    where kept.organization_id = ${organizationId} and kept.table_name = ${table} and kept.record_id = ${id}`
}

/**
 * The versions a listing shows, by their columns' values: each named column holds one of its
 * values (null: the column is null). Absent: every version.
 */
export type VersionSelection = Readonly<Record<string, readonly (string | null)[]>>

function selected(selection: VersionSelection | undefined) {
  const conditions = Object.entries(selection ?? {}).map(([column, values]) => {
    const ref = sql.ref(`versions.${column}`)
    const present = values.filter((value) => value !== null)
    const alternatives = [
      ...(present.length > 0 ? [sql`${ref} in (${sql.join(present)})`] : []),
      ...(values.includes(null) ? [sql`${ref} is null`] : []),
    ]
    return sql`(${alternatives.length > 0 ? sql.join(alternatives, sql` or `) : sql`false`})`
  })
  return conditions.length > 0 ? sql.join(conditions, sql` and `) : sql`true`
}

/** One page of a record's versions, newest first unless asked oldest first, and how many there are. */
export async function recordVersions<T extends VersionedTable>(
  db: Db,
  organizationId: number,
  table: T,
  id: number,
  { page, size }: PageQuery,
  { direction = 'desc', shown }: { direction?: 'asc' | 'desc'; shown?: VersionSelection } = {},
): Promise<{ rows: RecordVersion<T>[]; total: number }> {
  const { rows } = await sql<RecordVersion<T> & { total_count: number }>`
    select versions.*, count(*) over () as total_count
    from (${versionsOf(table, organizationId, id)}) as versions
    where ${selected(shown)}
    order by versions.version ${sql.raw(direction === 'asc' ? 'asc' : 'desc')}
    limit ${size} offset ${page * size}`.execute(db)
  if (rows.length > 0 || page === 0) return { rows, total: Number(rows[0]?.total_count ?? 0) }
  const counted = await sql<{ count: number }>`
    select count(*)::int as count from (${versionsOf(table, organizationId, id)}) as versions
    where ${selected(shown)}`.execute(db)
  return { rows, total: Number(counted.rows[0]?.count ?? 0) }
}

/** One version of a record, current or kept, if the selection shows it. */
export async function recordVersion<T extends VersionedTable>(
  db: Db,
  organizationId: number,
  table: T,
  id: number,
  version: number,
  shown?: VersionSelection,
): Promise<RecordVersion<T> | undefined> {
  const { rows } = await sql<RecordVersion<T>>`
    select versions.* from (${versionsOf(table, organizationId, id)}) as versions
    where versions.version = ${version} and ${selected(shown)}`.execute(db)
  return rows[0]
}

/** Which records' versions a type-level history lists: since when, and of one patient's only. */
export interface VersionsFilter {
  /** Versions made at or after this instant (their change time, `updated_at`). */
  since: Date | undefined
  /** The column naming a record's patient, and the patient (a `patient/` scope's compartment). */
  patient?: { column: string; id: number }
  /** The versions shown (of clinical records, those of the type's kinds). */
  shown?: VersionSelection
}

/**
 * A page of the versions of every record of `table` in the organization, the current ones and
 * those kept, newest change first, and how many match.
 */
export async function tableVersions<T extends VersionedTable>(
  db: Db,
  organizationId: number,
  table: T,
  { since, patient, shown }: VersionsFilter,
  { page, size }: PageQuery,
): Promise<{ rows: RecordVersion<T>[]; total: number }> {
  const { rows } = await sql<RecordVersion<T> & { total_count: number }>`
    select versions.*, count(*) over () as total_count
    from (
      select current.*, null::timestamptz as replaced_at, false as removed
      from ${sql.table(table)} as current
      where current.organization_id = ${organizationId}
      union all
      select (jsonb_populate_record(null::${sql.table(table)}, kept.row)).*, kept.ended_at, kept.removed
      from record_history as kept
      where kept.organization_id = ${organizationId} and kept.table_name = ${table}
    ) as versions
    where ${since ? sql`versions.updated_at >= ${since}` : sql`true`}
      and ${patient ? sql`${sql.ref(`versions.${patient.column}`)} = ${patient.id}` : sql`true`}
      and ${selected(shown)}
    order by versions.updated_at desc, versions.id desc, versions.version desc
    limit ${size} offset ${page * size}`.execute(db)
  return { rows, total: Number(rows[0]?.total_count ?? 0) }
}
