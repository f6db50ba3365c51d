import { type Kysely, sql } from 'kysely'

// Frozen: an organization is served as a FHIR resource (the practice's Organization and Location),
// whose version and change time the database keeps as it does for the other records (0016).

export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table organizations add column version integer not null default 1`.execute(db)
  await sql`create trigger organizations_version before update on organizations
    for each row execute function bump_record_version()`.execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop trigger organizations_version on organizations`.execute(db)
  await sql`alter table organizations drop column version`.execute(db)
}
