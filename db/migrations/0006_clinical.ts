import { type Kysely, sql } from 'kysely'

// Frozen: clinical records of a patient (vital signs, lab results, conditions, allergies,
// medications) in one table: common columns for scoping, listing and the entered-in-error trail,
// the kind's own fields in `data`, and `code`/`status` extracted for filtering.

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('clinical_records')
    .addColumn('id', 'integer', (c) => c.primaryKey().generatedAlwaysAsIdentity())
    .addColumn('organization_id', 'integer', (c) => c.notNull().references('organizations.id'))
    .addColumn('patient_id', 'integer', (c) => c.notNull().references('patients.id'))
    .addColumn('encounter_id', 'integer')
    .addColumn('kind', 'text', (c) =>
      c.notNull().check(sql`kind in ('VITAL_SIGNS', 'LAB_RESULT', 'CONDITION', 'ALLERGY', 'MEDICATION')`),
    )
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('code', 'text')
    .addColumn('effective_at', 'timestamptz', (c) => c.notNull())
    .addColumn('data', 'jsonb', (c) => c.notNull())
    .addColumn('version', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('recorded_by', 'integer', (c) => c.notNull().references('users.id'))
    .addColumn('recorded_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_by', 'integer', (c) => c.notNull().references('users.id'))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('entered_in_error_at', 'timestamptz')
    .addColumn('entered_in_error_by', 'integer', (c) => c.references('users.id'))
    .addColumn('entered_in_error_reason', 'text')
    .execute()
  await db.schema
    .createIndex('clinical_records_patient_idx')
    .on('clinical_records')
    .columns(['organization_id', 'patient_id', 'kind', 'effective_at'])
    .execute()
  // A patient has at most one active allergy record per substance.
  await sql`create unique index clinical_records_active_allergy_key on clinical_records (patient_id, code)
    where kind = 'ALLERGY' and status = 'ACTIVE'`.execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('clinical_records').execute()
}
