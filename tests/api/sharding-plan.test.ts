import { readFileSync } from 'node:fs'
import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { DatabaseHandle } from '../../db/connect.js'
import { openTestDatabase } from '../helpers/app.js'

// docs/scaling.md plans sharding by organization with Citus. This keeps the plan true against the
// migrated schema, so a new table or index cannot silently break it.
const plan = readFileSync(new URL('../../docs/scaling.md', import.meta.url), 'utf8')
const section = plan.slice(plan.indexOf('## Sharding by organization with Citus'))

/** The tables of one row of the plan's table, by the row's first cell. */
function planned(kind: string): string[] {
  const row = section.split('\n').find((line) => line.startsWith(`| ${kind} |`))
  if (!row) throw new Error(`docs/scaling.md has no row "${kind}"`)
  return [...(row.split('|')[2] ?? '').matchAll(/`([a-z_]+)`/g)].map((match) => match[1] as string)
}

const DISTRIBUTED = 'distributed by `organization_id`'
const NEEDS_COLUMN = 'distributed, needs `organization_id` added'
const REFERENCE = 'reference tables (copied to every node)'
const LOCAL = 'kept on the coordinator (local tables)'
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

interface UniqueIndex {
  table: string
  name: string
  columns: string[]
  primary: boolean
}

async function uniqueIndexes(): Promise<UniqueIndex[]> {
  const { rows } = await sql<{ table: string; name: string; columns: string; primary: boolean }>`
    select t.relname as "table", i.relname as name, x.indisprimary as primary,
      coalesce((select string_agg(a.attname, ',' order by k.ord)
        from unnest(x.indkey) with ordinality k(attnum, ord)
        join pg_attribute a on a.attrelid = t.oid and a.attnum = k.attnum), '') as columns
    from pg_index x join pg_class t on t.oid = x.indrelid join pg_class i on i.oid = x.indexrelid
    where x.indisunique and t.relnamespace = 'public'::regnamespace`.execute(database.db)
  return rows.map((row) => ({ ...row, columns: row.columns.split(',').filter(Boolean) }))
}

describe('the sharding plan in docs/scaling.md', () => {
  it('names every table of the schema exactly once', async () => {
    const rows = [DISTRIBUTED, NEEDS_COLUMN, REFERENCE, LOCAL].flatMap(planned)
    expect(new Set(rows).size, 'a table in two rows').toBe(rows.length)
    expect([...rows].sort()).toEqual((await tables()).sort())
  })

  it('gives every distributed table a non-null organization_id, and not yet those said to need one', async () => {
    const columns = await withOrganizationColumn()
    for (const table of planned(DISTRIBUTED)) {
      expect(columns.has(table), table).toBe(true)
      // A nullable one is planned for by name.
      if (!columns.get(table)) expect(section, table).toContain(`\`${table}.organization_id\` is null`)
    }
    // When one gets its column, the plan moves it to the row above.
    for (const table of planned(NEEDS_COLUMN)) expect(columns.has(table), table).toBe(false)
  })

  it('keys every unique index of a distributed table by organization, or lists it as to change', async () => {
    const distributed = new Set([...planned(DISTRIBUTED), ...planned(NEEDS_COLUMN)])
    const unplanned = (await uniqueIndexes())
      .filter(({ table }) => distributed.has(table))
      .filter(({ columns }) => !columns.includes('organization_id'))
      // The `(id)` primary keys are planned as a whole: `(organization_id, id)` everywhere.
      .filter(({ primary, columns }) => !(primary && columns.join() === 'id'))
      .filter(({ name }) => !section.includes(`\`${name}\``))
      .map(({ table, name, columns }) => `${name} on ${table} (${columns.join(', ')})`)
    expect(unplanned).toEqual([])
  })
})
