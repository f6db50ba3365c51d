import { type MigrationResultSet, Migrator, sql } from 'kysely'
import type { Db } from './database.js'
import { migrations } from './migrations/index.js'

/**
 * Whether every migration is already recorded. Kysely's migrator introspects the whole schema
 * before it looks, which was most of a start on an up-to-date embedded database
 * (docs/performance-log.md);
 * this asks one question instead.
 */
async function upToDate(db: Db): Promise<boolean> {
  const { rows: tables } = await sql<{ present: boolean }>`
    select to_regclass('kysely_migration') is not null as present
  `.execute(db)
  if (!tables[0]?.present) return false
  const { rows } = await sql<{ name: string }>`select name from kysely_migration`.execute(db)
  const applied = new Set(rows.map((row) => row.name))
  return Object.keys(migrations).every((name) => applied.has(name))
}

/**
 * Brings the schema up to the newest migration; concurrent callers wait on Kysely's migration lock.
 * `onPending` hears, before anything is applied, that the schema is not up to date.
 */
export async function migrateToLatest(db: Db, onPending?: () => void): Promise<MigrationResultSet> {
  if (await upToDate(db)) return { results: [] }
  onPending?.()
  const migrator = new Migrator({
    db,
    provider: { getMigrations: async () => migrations },
    // Areas are built side by side, so a migration can land after a later-numbered one has run.
    allowUnorderedMigrations: true,
  })
  const result = await migrator.migrateToLatest()
  if (result.error) throw result.error
  return result
}
