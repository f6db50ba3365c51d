import { type RawBuilder, type SqlBool, sql } from 'kysely'
import { preconditionFailed } from '../errors.js'

/**
 * The version a conditional write expects (from `If-Match`), or undefined for an unconditional
 * one. Callers check it while holding the row, so check and write are one atomic step.
 */
export type ExpectedVersion = number | undefined

/** Refuses the write (412) when the record is no longer at the version the client read. */
export function assertVersion(current: number, expected: ExpectedVersion): void {
  if (expected !== undefined && current !== expected) throw preconditionFailed(current)
}

/**
 * The record a conditional write holds (read under its lock), refused with 412 unless it is at the
 * expected version. Without a record, `missing` says why: the organization rule's 403 or 404.
 */
export async function atExpectedVersion<R extends { version: number }>(
  held: R | undefined,
  expected: ExpectedVersion,
  missing: () => Promise<never>,
): Promise<R> {
  const current = held ?? (await missing())
  assertVersion(current.version, expected)
  return current
}

/**
 * Among an UPDATE's changes, makes it a change whatever the row's columns hold: for what is stored
 * beside the row (a provider's hours, an encounter's addenda). Setting the change time is what
 * says so; a versioned table's trigger sets it to the database's time in any case.
 */
export const touch = () => ({ updated_at: new Date() })

// Who wrote last is kept with a record but is not what it holds: writing it alone over the same
// content is no change.
const WRITER_COLUMNS: ReadonlySet<string> = new Set(['updated_by'])

/**
 * The condition of an UPDATE setting `changes` that makes it a change of the record: some column
 * would take a value other than the one it holds, or the changes include a touch(). A write that
 * leaves the content as it is changes nothing, so the database's trigger never raises the version
 * and change time, and no event is made from a changed row. The database compares (`is distinct
 * from`) as its types do: null like a value, jsonb by content, timestamps as instants.
 */
export function changesRecord(changes: object): RawBuilder<SqlBool> {
  if ('updated_at' in changes) return sql<SqlBool>`true`
  const compared = Object.entries(changes).filter(
    ([column, value]) => value !== undefined && !WRITER_COLUMNS.has(column),
  )
  if (compared.length === 0) return sql<SqlBool>`false`
  return sql<SqlBool>`(${sql.join(
    compared.map(([column, value]) => sql`${sql.ref(column)} is distinct from ${value}`),
    sql` or `,
  )})`
}
