import { type Kysely, sql } from 'kysely'

// Frozen: the scopes granted with a session besides openid, profile and email (SMART's
// online_access and offline_access), kept so that every refresh answers with the same scope.
export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table sessions add column scopes text[] not null default '{}'`.execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`alter table sessions drop column scopes`.execute(db)
}
