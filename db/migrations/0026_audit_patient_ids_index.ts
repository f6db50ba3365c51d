import { type Kysely, sql } from 'kysely'

// Frozen: the audit trail's resource ids are searched only for patients (who saw this patient in a
// list, a search or a read), so only patient records keep an entry in the inverted index; every
// other record is written without one.
export async function up(db: Kysely<any>): Promise<void> {
  await sql`drop index audit_log_resource_ids_idx`.execute(db)
  await sql`create index audit_log_patient_ids_idx on audit_log using gin (resource_ids)
    where resource_type = 'patient'`.execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop index audit_log_patient_ids_idx`.execute(db)
  await sql`create index audit_log_resource_ids_idx on audit_log using gin (resource_ids)`.execute(db)
}
