import { type Kysely, sql } from 'kysely'

// Frozen: patient documents. Rows are written before their bytes (status PENDING), so every
// stored object is known to the database and an interrupted upload can be cleaned up.

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('documents')
    .addColumn('id', 'integer', (c) => c.primaryKey().generatedAlwaysAsIdentity())
    .addColumn('organization_id', 'integer', (c) => c.notNull().references('organizations.id'))
    .addColumn('patient_id', 'integer', (c) => c.notNull().references('patients.id'))
    .addColumn('encounter_id', 'integer')
    .addColumn('title', 'text', (c) => c.notNull())
    .addColumn('category', 'text', (c) => c.notNull())
    .addColumn('content_type', 'text', (c) => c.notNull())
    .addColumn('file_name', 'text', (c) => c.notNull())
    .addColumn('size_bytes', 'bigint')
    .addColumn('sha256', 'text')
    .addColumn('storage_key', 'text', (c) => c.notNull().unique())
    .addColumn('status', 'text', (c) =>
      c.notNull().defaultTo('PENDING').check(sql`status in ('PENDING', 'AVAILABLE', 'DELETED')`),
    )
    .addColumn('uploaded_by', 'integer', (c) => c.notNull().references('users.id'))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('deleted_at', 'timestamptz')
    .addColumn('deleted_by', 'integer', (c) => c.references('users.id'))
    .addColumn('purged_at', 'timestamptz')
    .execute()
  await db.schema
    .createIndex('documents_patient_idx')
    .on('documents')
    .columns(['organization_id', 'patient_id', 'created_at'])
    .execute()
  await sql`create index documents_housekeeping_idx on documents (status, updated_at) where purged_at is null`.execute(
    db,
  )
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('documents').execute()
}
