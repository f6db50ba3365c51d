import { sql } from 'kysely'
import type { Db } from '../../../../db/database.js'

const WAIT_STEP_MS = 50

/**
 * The transactionTime of an export: an instant such that every change stamped before it has
 * committed by the time this returns, so that "changed before it" and "changed at or after it"
 * split all changes exactly between an export and the next one made `_since` it. Change times are
 * the writing transaction's start (`now()`), so the instant is taken first and then every
 * transaction begun before it is waited for; one still open after `maxWaitMs` fails the export
 * rather than let it miss that transaction's changes.
 */
export async function transactionTime(db: Db, maxWaitMs: number): Promise<Date> {
  const { rows } = await sql<{
    at: Date
  }>`select date_trunc('milliseconds', clock_timestamp()) as at`.execute(db)
  const at = (rows[0] as { at: Date }).at
  const deadline = Date.now() + maxWaitMs
  for (;;) {
    const open = await sql<{ count: number }>`
      select count(*)::int as count from pg_stat_activity
      where datname = current_database() and pid <> pg_backend_pid()
        and state <> 'idle' and xact_start < ${at}`.execute(db)
    if (Number(open.rows[0]?.count ?? 0) === 0) return at
    if (Date.now() > deadline) {
      throw new Error('Transactions begun before the export stayed open; it cannot be a consistent snapshot')
    }
    await new Promise((resolve) => setTimeout(resolve, WAIT_STEP_MS))
  }
}
