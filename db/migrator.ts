import { type Kysely, type MigrationResultSet, Migrator } from 'kysely'
import type { Database } from './database.js'
import { migrations } from './migrations/index.js'

/** Brings the schema up to the newest migration; concurrent callers wait on Kysely's migration lock. */
export async function migrateToLatest(db: Kysely<Database>): Promise<MigrationResultSet> {
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
