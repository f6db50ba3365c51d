import { type Kysely, sql } from 'kysely'

// Frozen: every instance reads the sessions revoked since its last look every few seconds.
export async function up(db: Kysely<any>): Promise<void> {
  await sql`create index sessions_revoked_idx on sessions (revoked_at) where revoked_at is not null`.execute(
    db,
  )
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop index sessions_revoked_idx`.execute(db)
}
