import { type Kysely, sql } from 'kysely'

// Frozen: the patient an audited call concerned (the `patientId` of its path, body or query), so an
// organization's administrators can list every access to one patient's records; and indexes for
// the audit-event queries, which always filter by organization and order by time.

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('audit_log').addColumn('patient_id', 'integer').execute()
  await sql`create index audit_log_org_patient_time_idx on audit_log (organization_id, patient_id, occurred_at)
    where patient_id is not null`.execute(db)
  await db.schema
    .createIndex('audit_log_org_user_time_idx')
    .on('audit_log')
    .columns(['organization_id', 'user_id', 'occurred_at'])
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('audit_log_org_user_time_idx').execute()
  await db.schema.dropIndex('audit_log_org_patient_time_idx').execute()
  await db.schema.alterTable('audit_log').dropColumn('patient_id').execute()
}
