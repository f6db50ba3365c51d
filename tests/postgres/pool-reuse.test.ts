import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { DatabaseHandle } from '../../db/connect.js'
import { openPostgres } from '../../db/postgres.js'
import { newPostgresDatabase } from '../helpers/app.js'

let handle: DatabaseHandle

beforeAll(async () => {
  handle = openPostgres({ url: await newPostgresDatabase(), poolMax: 1 })
})
afterAll(async () => {
  await handle?.close()
})

describe('a pooled connection handed out again and again', () => {
  // Each query takes the pool's one connection and gives it back. Anything wrapped around the
  // connection on every checkout would pile up until a call overflowed the stack (under the API
  // benchmark, after a few minutes).
  it('still answers after more checkouts than the call stack is deep', async () => {
    const checkouts = 15_000
    for (let i = 0; i < checkouts; i++) await sql`select 1`.execute(handle.db)
    const { rows } = await sql<{ answer: number }>`select 42 as answer`.execute(handle.db)
    expect(rows).toEqual([{ answer: 42 }])
  }, 120_000)
})
