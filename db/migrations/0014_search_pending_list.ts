import { type Kysely, sql } from 'kysely'

// Frozen: new patients enter the search index through its pending list, which every search reads in
// full until the list is merged into the index. At PostgreSQL's default of 4 MB a busy practice's
// searches read thousands of pending entries each (several times slower: docs/performance-log.md),
// and the registration that triggers the merge waits for all of it. 128 kB keeps both small; bulk
// inserts still go through the list in batches.

export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter index patients_search_trgm_idx set (gin_pending_list_limit = 128)`.execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`alter index patients_search_trgm_idx reset (gin_pending_list_limit)`.execute(db)
}
