import { randomUUID } from 'node:crypto'
import { hostname } from 'node:os'
import { type RawBuilder, sql } from 'kysely'
import { acrossOrganizations, type CrossOrganizationWork } from './across-organizations.js'
import type { Db } from './database.js'
import { prepared } from './prepared-statements.js'

/**
 * Leases of background jobs. A worker claims a job by writing its id (the lease's owner) and the
 * end of the lease; until then no other worker takes the job. Whatever the worker then writes to
 * the job (renewal, progress, outcome, release) it writes only while the owner is still its own, so
 * a worker whose lease lapsed and was taken over changes nothing. The jobs of a worker that died
 * are claimed again once their leases lapse.
 */
type LeasedTable = 'webhook_deliveries' | 'bulk_exports'

/**
 * The lease's columns of each table. Webhook deliveries named theirs before bulk exports existed;
 * renaming them would not be additive, and old and new instances share the database during a
 * rolling deploy (docs/operations.md), so the names stay and this table maps them.
 */
const LEASE_COLUMNS = {
  webhook_deliveries: { owner: 'locked_by', until: 'locked_until' },
  bulk_exports: { owner: 'lease_owner', until: 'lease_until' },
} as const satisfies Record<LeasedTable, { owner: string; until: string }>

const WORKERS: Record<LeasedTable, CrossOrganizationWork> = {
  webhook_deliveries: 'outbox worker',
  bulk_exports: 'bulk export worker',
}

/** A new worker's lease owner: its host and process, for whoever reads the table, and unique. */
export const newLeaseOwner = (): string => `${hostname()}/${process.pid}/${randomUUID().slice(0, 8)}`

/** The end of a lease taken or renewed now for `leaseSeconds`. */
export const leaseUntil = (leaseSeconds: number): RawBuilder<Date> =>
  sql<Date>`now() + make_interval(secs => ${leaseSeconds})`

const ownerOf = (table: LeasedTable) => sql.ref(LEASE_COLUMNS[table].owner)
const untilOf = (table: LeasedTable) => sql.ref(LEASE_COLUMNS[table].until)

/** The assignments of a claim, for its `set`. */
export const takeLease = (
  table: LeasedTable,
  leaseOwner: string,
  leaseSeconds: number,
): RawBuilder<unknown> =>
  sql`${ownerOf(table)} = ${leaseOwner}, ${untilOf(table)} = ${leaseUntil(leaseSeconds)}`

/** The assignments that release a lease, for an update's `set`. */
export const noLease = (table: LeasedTable): RawBuilder<unknown> =>
  sql`${ownerOf(table)} = null, ${untilOf(table)} = null`

/** Whether a row of `table` (named `row`, the table or its alias) may be claimed: never leased, released, or lapsed. */
export const leaseFree = (table: LeasedTable, row: string = table): RawBuilder<boolean> => {
  const until = sql.ref(`${row}.${LEASE_COLUMNS[table].until}`)
  return sql<boolean>`(${until} is null or ${until} < now())`
}

/** Releases the leases `leaseOwner` holds on the rows `ids`, untried or unfinished. */
export async function releaseLeases(
  db: Db,
  table: LeasedTable,
  leaseOwner: string,
  ids: readonly (number | string)[],
): Promise<void> {
  if (ids.length === 0) return
  await prepared(sql`${acrossOrganizations(WORKERS[table])}
    update ${sql.table(table)} set ${noLease(table)}
    where id in (${sql.join(ids)}) and ${ownerOf(table)} = ${leaseOwner}`).execute(db)
}

/**
 * Releases every lease of the table. Only for the embedded database: one process alone can open it,
 * so any lease found at its start was held by that process before it crashed.
 */
export async function releaseAllLeases(db: Db, table: LeasedTable): Promise<void> {
  await prepared(sql`${acrossOrganizations(WORKERS[table])}
    update ${sql.table(table)} set ${noLease(table)}
    where ${ownerOf(table)} is not null`).execute(db)
}
