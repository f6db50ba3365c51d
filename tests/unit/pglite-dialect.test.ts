import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type DatabaseHandle, openPglite } from '../../db/connect.js'

let handle: DatabaseHandle

beforeAll(async () => {
  handle = await openPglite({})
})
afterAll(async () => {
  await handle.close()
})

describe('the embedded database connection', () => {
  it('lets the event loop turn between queued statements, so network events are not held up', async () => {
    const order: string[] = []
    // Each longer than the share of a turn the connection gets before it is handed over.
    const statements = Array.from({ length: 5 }, (_, index) =>
      sql`select pg_sleep(0.005), ${index}::int as n`
        .execute(handle.db)
        .then(() => order.push(`statement ${index}`)),
    )
    setImmediate(() => order.push('turn'))
    await Promise.all(statements)
    // Without the hand-over on a later turn, PGlite (which runs in this thread) would answer all
    // five in one go before anything else ran.
    expect(order.indexOf('turn')).toBeGreaterThan(0)
    expect(order.indexOf('turn')).toBeLessThan(order.length - 1)
  })

  it('keeps a statement queued beside a transaction out of it, on the one session', async () => {
    const inside = handle.db.transaction().execute(async (trx) => {
      await sql`create temporary table handover (n int) on commit drop`.execute(trx)
      for (let n = 0; n < 3; n++) await sql`insert into handover values (${n})`.execute(trx)
      return (await sql<{ n: number }>`select n from handover order by n`.execute(trx)).rows
    })
    // Run inside the transaction, it would see the table the transaction created and drops on commit.
    const beside = sql<{ tables: number }>`
      select count(*)::int as tables from pg_tables where tablename = 'handover'`.execute(handle.db)
    expect((await inside).map((row) => row.n)).toEqual([0, 1, 2])
    expect((await beside).rows[0]?.tables).toBe(0)
  })
})
