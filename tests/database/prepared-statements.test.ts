import { Kysely, PostgresDialect, sql } from 'kysely'
import pg from 'pg'
import { afterEach, describe, expect, it } from 'vitest'
import { PreparingPostgresDialect, prepared, rememberDeclared } from '../../db/prepared-statements.js'

interface Tables {
  t: { a: number; b: number | null }
  u: { a: number }
}

// Compiling needs no server: a pool that is never asked for a connection never opens one.
const opened: Kysely<Tables>[] = []
function database(limit = 10) {
  const dialect = new PreparingPostgresDialect(new pg.Pool(), limit)
  const db = new Kysely<Tables>({ dialect })
  opened.push(db)
  /** The name the statement of `query` runs under once compiled, if it is prepared. */
  const nameOf = (query: { compile(): { sql: string } }) => dialect.names.nameOf(query.compile().sql)
  return { db, nameOf }
}
afterEach(async () => {
  for (const db of opened.splice(0)) await db.destroy()
})

const NAME = /^ehr_\d+$/

describe('prepared statements', () => {
  it('prepares each change Kysely builds, once per text, a marking comment or none', () => {
    const { db, nameOf } = database()
    const changes = [
      db.insertInto('t').values({ a: 1 }),
      db.updateTable('t').set({ a: 2 }).where('b', '=', 3).returning(['a', 'b']),
      db.deleteFrom('t').where('a', '=', 1),
      db.deleteFrom('t').where('a', '<', 1).modifyEnd(sql`/* all organizations: housekeeping */`),
    ]
    const names = changes.map(nameOf)
    expect(
      names.every((name) => NAME.test(name ?? '')),
      String(names),
    ).toBe(true)
    expect(new Set(names).size).toBe(changes.length)
    expect(changes.map(nameOf)).toEqual(names)
  })

  it('leaves a change returning every column unnamed, since a new column would change its result', () => {
    const { db, nameOf } = database()
    expect(nameOf(db.insertInto('t').values({ a: 1 }).returningAll())).toBeUndefined()
    expect(nameOf(db.updateTable('t').set({ a: 1 }).returningAll())).toBeUndefined()
    expect(nameOf(db.insertInto('t').values({ a: 1 }).returning(['a', 'b']))).toMatch(NAME)
  })

  it('names a statement written in SQL, or a read, only when its code declares it, whatever its text', () => {
    const { db, nameOf } = database()
    const change = (n: number) => sql`/* all organizations: audit batches */ insert into t values (${n})`
    const read = (a: number) => db.selectFrom('t').select('a').where('a', '=', a)
    expect(nameOf({ compile: () => change(1).compile(db) })).toBeUndefined()
    expect(nameOf(read(1))).toBeUndefined()
    expect(nameOf({ compile: () => prepared(change(2)).compile(db) })).toMatch(NAME)
    expect(nameOf(prepared(read(2)))).toMatch(NAME)
  })

  it('names a declared statement on every database, whichever compiled it', () => {
    const first = database()
    const second = database()
    const text = prepared(first.db.selectFrom('u').select('a').where('a', '=', 1)).compile().sql
    expect(second.nameOf({ compile: () => ({ sql: text }) })).toMatch(NAME)
    // Compiled once by a database that prepares nothing, as a precompiled query may be.
    const plain = new Kysely<Tables>({ dialect: new PostgresDialect({ pool: new pg.Pool() }) })
    opened.push(plain)
    const compiled = prepared(plain.selectFrom('u').select('a').where('a', '>', 1)).compile()
    expect(first.nameOf({ compile: () => compiled })).toBeUndefined()
    expect(rememberDeclared(compiled)).toBe(true)
    expect(first.nameOf({ compile: () => compiled })).toMatch(NAME)
    expect(rememberDeclared(plain.selectFrom('u').select('a').compile())).toBe(false)
  })

  it('leaves schema changes and transaction control unnamed', () => {
    const { db, nameOf } = database()
    expect(nameOf(db.schema.createTable('t').addColumn('a', 'integer'))).toBeUndefined()
    expect(nameOf(db.schema.alterTable('t').addColumn('b', 'integer'))).toBeUndefined()
    expect(nameOf({ compile: () => sql`begin`.compile(db) })).toBeUndefined()
  })

  it('stops naming new texts at the limit, and never gives a name to a second text', () => {
    const { db, nameOf } = database(2)
    const remove = (a: number) =>
      db
        .deleteFrom('t')
        .where('a', '=', a)
        .where(sql.raw<boolean>(`${a} = ${a}`))
    const first = nameOf(remove(1))
    const second = nameOf(remove(2))
    expect(nameOf(remove(3))).toBeUndefined()
    expect(nameOf(prepared(db.selectFrom('t').select('a')))).toBeUndefined()
    expect([nameOf(remove(1)), nameOf(remove(2))]).toEqual([first, second])
    expect(first).not.toBe(second)
  })
})
