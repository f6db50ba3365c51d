import { type Kysely, sql } from 'kysely'

// Frozen: the last-name index also carries the name itself, so that counting the patients of a
// last name (the total of a filtered list) is answered from the index without reading the rows.
// PostgreSQL does not count an expression index as covering the column inside the expression.

export async function up(db: Kysely<any>): Promise<void> {
  await sql`drop index patients_org_last_name_idx`.execute(db)
  await sql`create index patients_org_last_name_idx on patients (organization_id, lower(last_name), id)
    include (last_name) where deleted_at is null`.execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop index patients_org_last_name_idx`.execute(db)
  await sql`create index patients_org_last_name_idx on patients (organization_id, lower(last_name), id)
    where deleted_at is null`.execute(db)
}
