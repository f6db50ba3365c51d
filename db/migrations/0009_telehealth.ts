import { type Kysely, sql } from 'kysely'

// Frozen: video rooms for telehealth visits.

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('telehealth_rooms')
    .addColumn('id', 'integer', (c) => c.primaryKey().generatedAlwaysAsIdentity())
    .addColumn('organization_id', 'integer', (c) => c.notNull().references('organizations.id'))
    .addColumn('name', 'text', (c) => c.notNull().unique())
    .addColumn('appointment_id', 'integer', (c) => c.unique().references('appointments.id'))
    .addColumn('provider_id', 'integer', (c) => c.notNull().references('providers.id'))
    .addColumn('patient_id', 'integer', (c) => c.notNull().references('patients.id'))
    .addColumn('status', 'text', (c) => c.notNull().check(sql`status in ('OPEN', 'CLOSED')`))
    .addColumn('created_by', 'integer', (c) => c.notNull().references('users.id'))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('closed_at', 'timestamptz')
    .addColumn('closed_by', 'integer', (c) => c.references('users.id'))
    .execute()
  // An ad hoc visit reuses the open room of the same provider and patient.
  await sql`create unique index telehealth_rooms_open_ad_hoc_key on telehealth_rooms (organization_id, provider_id, patient_id)
    where appointment_id is null and status = 'OPEN'`.execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('telehealth_rooms').execute()
}
