import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { DatabaseHandle } from '../../db/connect.js'
import {
  DISTRIBUTED_TABLES,
  LOCAL_TABLES,
  NULLABLE_ORGANIZATION,
  REFERENCE_TABLES,
  UNIQUE_WITHOUT_ORGANIZATION,
} from '../../db/sharding-plan.js'
import { openTestDatabase } from '../helpers/app.js'

// The sharding plan (db/sharding-plan.ts), kept true against the migrated schema, so that a new
// table or index cannot silently break it.
// Kysely's bookkeeping, not the service's data.
const MIGRATION_TABLES = ['kysely_migration', 'kysely_migration_lock']

let database: DatabaseHandle

beforeAll(async () => {
  database = await openTestDatabase()
})
afterAll(async () => {
  await database?.close()
})

async function tables(): Promise<string[]> {
  const { rows } = await sql<{ name: string }>`
    select relname as name from pg_class
    where relkind in ('r', 'p') and relnamespace = 'public'::regnamespace`.execute(database.db)
  return rows.map(({ name }) => name).filter((name) => !MIGRATION_TABLES.includes(name))
}

async function withOrganizationColumn(): Promise<Map<string, boolean>> {
  const { rows } = await sql<{ table: string; nullable: string }>`
    select table_name as "table", is_nullable as nullable from information_schema.columns
    where table_schema = 'public' and column_name = 'organization_id'`.execute(database.db)
  return new Map(rows.map(({ table, nullable }) => [table, nullable === 'NO']))
}

interface Key {
  table: string
  name: string
  columns: string[]
}

/** Unique indexes (primary keys included) and exclusion constraints: what Citus wants keyed by organization. */
async function uniqueKeys(): Promise<Key[]> {
  const { rows } = await sql<{ table: string; name: string; columns: string }>`
    select t.relname as "table", i.relname as name,
      coalesce((select string_agg(a.attname, ',' order by k.ord)
        from unnest(x.indkey) with ordinality k(attnum, ord)
        join pg_attribute a on a.attrelid = t.oid and a.attnum = k.attnum), '') as columns
    from pg_index x join pg_class t on t.oid = x.indrelid join pg_class i on i.oid = x.indexrelid
    where (x.indisunique or x.indisexclusion) and t.relnamespace = 'public'::regnamespace`.execute(
    database.db,
  )
  return rows.map((row) => ({ ...row, columns: row.columns.split(',').filter(Boolean) }))
}

interface ForeignKey extends Key {
  referenced: string
  referencedColumns: string[]
}

async function foreignKeys(): Promise<ForeignKey[]> {
  const { rows } = await sql<{
    table: string
    name: string
    columns: string
    referenced: string
    referenced_columns: string
  }>`
    select t.relname as "table", c.conname as name, r.relname as referenced,
      (select string_agg(a.attname, ',' order by k.ord) from unnest(c.conkey) with ordinality k(attnum, ord)
        join pg_attribute a on a.attrelid = c.conrelid and a.attnum = k.attnum) as columns,
      (select string_agg(a.attname, ',' order by k.ord) from unnest(c.confkey) with ordinality k(attnum, ord)
        join pg_attribute a on a.attrelid = c.confrelid and a.attnum = k.attnum) as referenced_columns
    from pg_constraint c join pg_class t on t.oid = c.conrelid join pg_class r on r.oid = c.confrelid
    where c.contype = 'f' and c.connamespace = 'public'::regnamespace`.execute(database.db)
  return rows.map(({ referenced_columns, ...row }) => ({
    ...row,
    columns: row.columns.split(','),
    referencedColumns: referenced_columns.split(','),
  }))
}

const distributed = new Set<string>(DISTRIBUTED_TABLES)
const reference = new Set<string>(REFERENCE_TABLES)

describe('the sharding plan in db/sharding-plan.ts', () => {
  it('names every table of the schema exactly once', async () => {
    const planned = [...DISTRIBUTED_TABLES, ...REFERENCE_TABLES, ...LOCAL_TABLES]
    expect(new Set(planned).size, 'a table in two lists').toBe(planned.length)
    expect([...planned].sort()).toEqual((await tables()).sort())
  })

  it('gives every distributed table a non-null organization_id', async () => {
    const columns = await withOrganizationColumn()
    for (const table of DISTRIBUTED_TABLES) {
      expect(columns.has(table), table).toBe(true)
      // A nullable one is planned for by name.
      if (!columns.get(table)) expect(Object.keys(NULLABLE_ORGANIZATION), table).toContain(table)
    }
  })

  it('keys every unique index and exclusion constraint of a distributed table by organization, or names it', async () => {
    const unplanned = (await uniqueKeys())
      .filter(({ table }) => distributed.has(table))
      .filter(({ columns }) => !columns.includes('organization_id'))
      .filter(({ name }) => !Object.hasOwn(UNIQUE_WITHOUT_ORGANIZATION, name))
      .map(({ table, name, columns }) => `${name} on ${table} (${columns.join(', ')})`)
    expect(unplanned).toEqual([])
  })

  it('lets a distributed table reference only a reference table, or another by organization too', async () => {
    const wrong = (await foreignKeys())
      .filter(({ table }) => distributed.has(table))
      .filter(({ referenced, columns, referencedColumns }) => {
        if (reference.has(referenced)) return false
        const at = columns.indexOf('organization_id')
        return !(distributed.has(referenced) && at >= 0 && referencedColumns[at] === 'organization_id')
      })
      .map(
        ({ table, name, columns, referenced, referencedColumns }) =>
          `${name}: ${table} (${columns.join(', ')}) -> ${referenced} (${referencedColumns.join(', ')})`,
      )
    expect(wrong).toEqual([])
  })
})
