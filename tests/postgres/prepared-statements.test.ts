import { type Kysely, sql } from 'kysely'
import { afterEach, beforeAll, describe, expect, it } from 'vitest'
import type { DatabaseHandle } from '../../db/connect.js'
import { openPostgres } from '../../db/postgres.js'
import { precompiledQuery } from '../../db/precompiled-query.js'
import { prepared } from '../../db/prepared-statements.js'
import { newPostgresDatabase } from '../helpers/app.js'

let url: string
let handle: DatabaseHandle | undefined

beforeAll(async () => {
  url = await newPostgresDatabase()
})

afterEach(async () => {
  await handle?.close()
  handle = undefined
})

/** The statements prepared in the session of the pool's only connection. */
async function preparedTexts(db: DatabaseHandle['db']): Promise<string[]> {
  const { rows } = await sql<{ statement: string }>`select statement from pg_prepared_statements`.execute(db)
  return rows.map((row) => row.statement)
}

async function openWithTable(preparedStatements: number) {
  handle = openPostgres({ url, poolMax: 1, preparedStatements })
  await sql`create temporary table prepared_check (a int)`.execute(handle.db)
  return handle.db
}

/** The temporary table, which the schema's types do not know. */
const checks = (db: DatabaseHandle['db']) => db as unknown as Kysely<{ prepared_check: { a: number } }>

const insertValues = (db: DatabaseHandle['db'], ...values: number[]) =>
  checks(db)
    .insertInto('prepared_check')
    .values(values.map((a) => ({ a })))
    .execute()

const sumOf = async (db: DatabaseHandle['db']) =>
  (await sql<{ total: number }>`select sum(a)::int as total from prepared_check`.execute(db)).rows[0]?.total

describe('prepared statements on PostgreSQL', () => {
  it('prepares each change once per connection and reuses it with new values; reads stay unnamed', async () => {
    const db = await openWithTable(10)
    for (const n of [1, 2, 3]) await insertValues(db, n)
    expect(await sumOf(db)).toBe(6)
    const prepared = await preparedTexts(db)
    expect(prepared.filter((text) => text.includes('insert into "prepared_check"'))).toHaveLength(1)
    expect(prepared.some((text) => text.includes('create temporary table') || text.includes('sum(a)'))).toBe(
      false,
    )
  })

  it('prepares a change written in SQL only when declared', async () => {
    const db = await openWithTable(10)
    await sql`insert into prepared_check values (${1})`.execute(db)
    expect(await preparedTexts(db)).toEqual([])
    for (const n of [2, 3]) await prepared(sql`insert into prepared_check values (${n})`).execute(db)
    expect(await sumOf(db)).toBe(6)
    expect(await preparedTexts(db)).toEqual(['insert into prepared_check values ($1)'])
  })

  it('prepares a declared read, compiled once', async () => {
    const db = await openWithTable(10)
    const matching = precompiledQuery((db, a: number) =>
      prepared(db.selectFrom(sql<{ a: number }>`prepared_check`.as('p')).select('a').where('a', '=', a)),
    )
    await insertValues(db, 7)
    expect(await matching(db, 7)).toEqual([{ a: 7 }])
    expect(await matching(db, 8)).toEqual([])
    expect(
      (await preparedTexts(db)).filter((text) => text.startsWith('select "a" from prepared_check')),
    ).toHaveLength(1)
  })

  it('keeps answering when a column is added while the connection lives', async () => {
    const db = await openWithTable(10)
    const insertAll = (a: number) =>
      checks(db).insertInto('prepared_check').values({ a }).returningAll().execute()
    const insertOne = (a: number) =>
      checks(db).insertInto('prepared_check').values({ a }).returning('a').execute()
    await insertAll(1)
    await insertOne(2)
    await sql`alter table prepared_check add column b int not null default 7`.execute(db)
    expect(await insertAll(3)).toEqual([{ a: 3, b: 7 }])
    expect(await insertOne(4)).toEqual([{ a: 4 }])
  })

  it('runs texts past the limit unnamed but correctly', async () => {
    const db = await openWithTable(2)
    await insertValues(db, 1)
    await insertValues(db, 2, 3)
    await insertValues(db, 4, 5, 6)
    expect(await sumOf(db)).toBe(21)
    expect(await preparedTexts(db)).toHaveLength(2)
  })

  it('prepares nothing when turned off', async () => {
    const db = await openWithTable(0)
    await insertValues(db, 1)
    await prepared(sql`insert into prepared_check values (${2})`).execute(db)
    expect(await preparedTexts(db)).toEqual([])
  })
})
