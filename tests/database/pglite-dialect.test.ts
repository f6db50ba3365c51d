import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type DatabaseHandle, openPglite } from '../../db/connect.js'
import { startPgliteAhead, takeStartedAhead } from '../../db/pglite-start.js'
import { EMBEDDED_SHARED_BUFFERS_MB, PgliteThread } from '../../db/pglite-thread-client.js'
import { fromDatabaseError } from '../../src/errors.js'

let handle: DatabaseHandle
let directory: string

beforeAll(async () => {
  handle = await openPglite({})
  directory = await mkdtemp(path.join(tmpdir(), 'ehr-pglite-'))
})
afterAll(async () => {
  await handle.close()
  await rm(directory, { recursive: true, force: true })
})

describe('the embedded database connection', () => {
  it('runs statements on a thread of its own: timers keep firing while one runs', async () => {
    let ticks = 0
    const timer = setInterval(() => ticks++, 5)
    await sql`select pg_sleep(0.3)`.execute(handle.db)
    clearInterval(timer)
    // PGlite on the event loop's own thread would have held every tick until the statement ended.
    expect(ticks).toBeGreaterThan(5)
  })

  it("opens with the shared buffers asked for, EMBEDDED_SHARED_BUFFERS_MB by default, not initdb's 128 MB", async () => {
    const sharedBuffers = async (db: DatabaseHandle['db']) =>
      (await sql<{ shared_buffers: string }>`show shared_buffers`.execute(db)).rows[0]?.shared_buffers
    expect(await sharedBuffers(handle.db)).toBe(`${EMBEDDED_SHARED_BUFFERS_MB}MB`)
    const larger = await openPglite({ sharedBuffersMb: 64 })
    try {
      expect(await sharedBuffers(larger.db)).toBe('64MB')
    } finally {
      await larger.close()
    }
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

  it("fails a statement with PostgreSQL's fields, which the error table maps", async () => {
    await sql`create temporary table unique_names (name text constraint unique_names_key unique)`.execute(
      handle.db,
    )
    await sql`insert into unique_names values ('a')`.execute(handle.db)
    const error = await sql`insert into unique_names values ('a')`.execute(handle.db).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(Error)
    expect(error).toMatchObject({ code: '23505', constraint: 'unique_names_key' })
    expect(fromDatabaseError(error)).toMatchObject({ status: 409, code: 'RES_002' })
  })

  it('gives values back as the service reads them: int8 as numbers, dates as text, bytes as bytes', async () => {
    const { rows } = await sql<{ big: number; day: string; at: Date; bytes: Uint8Array }>`
      select 9007199254740991::int8 as big, date '2024-02-29' as day,
        timestamptz '2024-02-29 10:00:00Z' as at, ${Buffer.from([1, 2, 3])}::bytea as bytes`.execute(
      handle.db,
    )
    expect(rows[0]?.big).toBe(9007199254740991)
    expect(rows[0]?.day).toBe('2024-02-29')
    expect(rows[0]?.at).toEqual(new Date('2024-02-29T10:00:00Z'))
    expect([...(rows[0]?.bytes ?? [])]).toEqual([1, 2, 3])
  })

  it('answers a statement after its thread closed as a lost connection (503), not a hang', async () => {
    const thread = new PgliteThread()
    await thread.ready
    await thread.close()
    const error = await thread.query('select 1', []).catch((e: unknown) => e)
    expect(error).toMatchObject({ code: '08006' })
    expect(fromDatabaseError(error)).toMatchObject({ status: 503, code: 'SYS_002' })
  })

  it('fails every statement with the reason when the database cannot be opened', async () => {
    const notADirectory = path.join(directory, 'file')
    await writeFile(notADirectory, 'not a data directory')
    const broken = await openPglite({ dataDir: notADirectory })
    const first = await sql`select 1`.execute(broken.db).catch((e: unknown) => e)
    const second = await sql`select 1`.execute(broken.db).catch((e: unknown) => e)
    expect(first).toBeInstanceOf(Error)
    expect(second).toBe(first)
    await broken.close()
  })
})

describe('opening the embedded database ahead (src/server.ts)', () => {
  it('is taken over by the open of the same directory, and not begun for a directory not made yet', async () => {
    const dataDir = path.join(directory, 'pgdata')
    startPgliteAhead(dataDir)
    expect(takeStartedAhead(dataDir)).toBeUndefined()
    const made = await openPglite({ dataDir })
    await sql`create table kept (n int)`.execute(made.db)
    await made.close()

    startPgliteAhead(dataDir)
    const reopened = await openPglite({ dataDir: path.join(directory, '.', 'pgdata') })
    expect(takeStartedAhead(dataDir)).toBeUndefined()
    const { rows } = await sql<{ present: boolean }>`
      select to_regclass('kept') is not null as present`.execute(reopened.db)
    expect(rows[0]?.present).toBe(true)
    await reopened.close()
  })
})
