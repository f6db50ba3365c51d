import { randomUUID } from 'node:crypto'
import { hostname } from 'node:os'
import { type RawBuilder, sql } from 'kysely'
import { acrossOrganizations, type CrossOrganizationWork } from './across-organizations.js'
import type { Db } from './database.js'
import { prepared } from './prepared-statements.js'

/**
 * Leases of background jobs. A worker claims a job by writing its id (`lease_owner`) and the end
 * of the lease (`lease_until`); until then no other worker takes the job. Whatever the worker then
 * writes to the job (renewal, progress, outcome, release) it writes only while `lease_owner` is
 * still its own, so a worker whose lease lapsed and was taken over changes nothing. The jobs of a
 * worker that died are claimed again once their leases lapse.
 */
type LeasedTable = 'webhook_deliveries' | 'bulk_exports'

const WORKERS: Record<LeasedTable, CrossOrganizationWork> = {
  webhook_deliveries: 'outbox worker',
  bulk_exports: 'bulk export worker',
}

/** A new worker's `lease_owner`: its host and process, for whoever reads the table, and unique. */
export const newLeaseOwner = (): string => `${hostname()}/${process.pid}/${randomUUID().slice(0, 8)}`

/** The end of a lease taken or renewed now for `leaseSeconds`. */
export const leaseUntil = (leaseSeconds: number): RawBuilder<Date> =>
  sql<Date>`now() + make_interval(secs => ${leaseSeconds})`

/** The assignments of a claim, for its `set`. */
export const takeLease = (leaseOwner: string, leaseSeconds: number): RawBuilder<unknown> =>
  sql`lease_owner = ${leaseOwner}, lease_until = ${leaseUntil(leaseSeconds)}`

/** Whether the row `row` (a table or its alias) may be claimed: never leased, released, or lapsed. */
export const leaseFree = (row: string): RawBuilder<boolean> => {
  const until = sql.ref(`${row}.lease_until`)
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
    update ${sql.table(table)} set lease_owner = null, lease_until = null
    where id in (${sql.join(ids)}) and lease_owner = ${leaseOwner}`).execute(db)
}

/**
 * Releases every lease of the table. Only for the embedded database: one process alone can open it,
 * so any lease found at its start was held by that process before it crashed.
 */
export async function releaseAllLeases(db: Db, table: LeasedTable): Promise<void> {
  await prepared(sql`${acrossOrganizations(WORKERS[table])}
    update ${sql.table(table)} set lease_owner = null, lease_until = null
    where lease_owner is not null`).execute(db)
}
