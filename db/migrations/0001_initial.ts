import { type Kysely, sql } from 'kysely'

// Frozen: a migration describes the schema as it was on the day it was written and imports
// nothing from the application.

export async function up(db: Kysely<any>): Promise<void> {
  await sql`create extension if not exists pg_trgm`.execute(db)

  await db.schema
    .createTable('organizations')
    .addColumn('id', 'integer', (c) => c.primaryKey().generatedAlwaysAsIdentity())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('group_path', 'text', (c) => c.notNull().unique())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute()

  await db.schema
    .createTable('users')
    .addColumn('id', 'integer', (c) => c.primaryKey().generatedAlwaysAsIdentity())
    .addColumn('organization_id', 'integer', (c) => c.notNull().references('organizations.id'))
    .addColumn('subject', 'text', (c) => c.notNull().unique())
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('password_hash', 'text')
    .addColumn('first_name', 'text', (c) => c.notNull())
    .addColumn('last_name', 'text', (c) => c.notNull())
    .addColumn('roles', sql`text[]`, (c) => c.notNull().defaultTo(sql`'{}'`))
    .addColumn('active', 'boolean', (c) => c.notNull().defaultTo(true))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute()
  await sql`create unique index users_email_key on users (lower(email))`.execute(db)
  await db.schema.createIndex('users_organization_idx').on('users').column('organization_id').execute()

  await db.schema
    .createTable('sessions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'integer', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('refresh_token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .addColumn('revoked_at', 'timestamptz')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute()
  await db.schema.createIndex('sessions_user_idx').on('sessions').column('user_id').execute()

  await db.schema
    .createTable('signing_keys')
    .addColumn('kid', 'text', (c) => c.primaryKey())
    .addColumn('algorithm', 'text', (c) => c.notNull())
    .addColumn('public_key', 'text', (c) => c.notNull())
    .addColumn('private_key', 'text', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('retired_at', 'timestamptz')
    .execute()

  await sql`create sequence patient_mrn_seq`.execute(db)
  await db.schema
    .createTable('patients')
    .addColumn('id', 'integer', (c) => c.primaryKey().generatedAlwaysAsIdentity())
    .addColumn('organization_id', 'integer', (c) => c.notNull().references('organizations.id'))
    .addColumn('mrn', 'text', (c) =>
      c.notNull().defaultTo(sql`'MRN' || lpad(nextval('patient_mrn_seq')::text, 8, '0')`),
    )
    .addColumn('status', 'text', (c) =>
      c.notNull().defaultTo('ACTIVE').check(sql`status in ('ACTIVE', 'INACTIVE', 'DECEASED')`),
    )
    .addColumn('first_name', 'text', (c) => c.notNull())
    .addColumn('middle_name', 'text')
    .addColumn('last_name', 'text', (c) => c.notNull())
    .addColumn('date_of_birth', 'date', (c) => c.notNull())
    .addColumn('gender', 'text', (c) =>
      c.notNull().check(sql`gender in ('Male', 'Female', 'Other', 'Unknown')`),
    )
    .addColumn('email', 'text')
    .addColumn('phone_number', 'text')
    .addColumn('address_street', 'text')
    .addColumn('address_city', 'text')
    .addColumn('address_state', 'text')
    .addColumn('address_postal_code', 'text')
    .addColumn('address_country', 'text')
    .addColumn('emergency_contact_name', 'text')
    .addColumn('emergency_contact_relationship', 'text')
    .addColumn('emergency_contact_phone', 'text')
    .addColumn('preferred_language', 'text')
    .addColumn('created_by', 'integer', (c) => c.references('users.id'))
    .addColumn('updated_by', 'integer', (c) => c.references('users.id'))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('deleted_at', 'timestamptz')
    .addColumn('deleted_by', 'integer', (c) => c.references('users.id'))
    .addColumn('search_text', 'text', (c) =>
      c
        .generatedAlwaysAs(
          sql`lower(first_name || ' ' || coalesce(middle_name, '') || ' ' || last_name || ' ' || mrn || ' ' || coalesce(email, '') || ' ' || coalesce(regexp_replace(phone_number, '[^0-9]', '', 'g'), ''))`,
        )
        .stored(),
    )
    // MRNs stay reserved after a soft delete: an identifier printed on paper is never reissued.
    .addUniqueConstraint('patients_organization_mrn_key', ['organization_id', 'mrn'])
    .execute()
  await sql`create index patients_org_last_name_idx on patients (organization_id, lower(last_name), id) where deleted_at is null`.execute(
    db,
  )
  await sql`create index patients_search_trgm_idx on patients using gin (search_text gin_trgm_ops)`.execute(
    db,
  )

  await db.schema
    .createTable('outbox_events')
    .addColumn('id', 'bigint', (c) => c.primaryKey().generatedAlwaysAsIdentity())
    .addColumn('organization_id', 'integer', (c) => c.notNull().references('organizations.id'))
    .addColumn('event_type', 'text', (c) => c.notNull())
    .addColumn('payload', 'jsonb', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute()
  await db.schema.createIndex('outbox_events_created_idx').on('outbox_events').column('created_at').execute()

  await db.schema
    .createTable('audit_log')
    .addColumn('id', 'bigint', (c) => c.primaryKey().generatedAlwaysAsIdentity())
    .addColumn('occurred_at', 'timestamptz', (c) => c.notNull())
    .addColumn('organization_id', 'integer')
    .addColumn('user_id', 'integer')
    .addColumn('action', 'text', (c) => c.notNull())
    .addColumn('resource_type', 'text', (c) => c.notNull())
    .addColumn('resource_ids', sql`integer[]`, (c) => c.notNull().defaultTo(sql`'{}'`))
    .addColumn('outcome', 'text', (c) => c.notNull())
    .addColumn('status_code', 'integer', (c) => c.notNull())
    .addColumn('request_id', 'text', (c) => c.notNull())
    .execute()
  await db.schema
    .createIndex('audit_log_org_time_idx')
    .on('audit_log')
    .columns(['organization_id', 'occurred_at'])
    .execute()
  await sql`create index audit_log_resource_ids_idx on audit_log using gin (resource_ids)`.execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const table of [
    'audit_log',
    'outbox_events',
    'patients',
    'signing_keys',
    'sessions',
    'users',
    'organizations',
  ]) {
    await db.schema.dropTable(table).execute()
  }
  await sql`drop sequence patient_mrn_seq`.execute(db)
}
