import { type Kysely, sql } from 'kysely'

// Frozen: housekeeping looks for expired reset links and refresh tokens on every run; without these
// it read every token each time, even when none was due.
export async function up(db: Kysely<any>): Promise<void> {
  await sql`create index refresh_tokens_expires_idx on refresh_tokens (expires_at)`.execute(db)
  await sql`create index password_reset_tokens_expires_idx on password_reset_tokens (expires_at)`.execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop index password_reset_tokens_expires_idx`.execute(db)
  await sql`drop index refresh_tokens_expires_idx`.execute(db)
}
