import { type Kysely, sql } from 'kysely'

// Frozen. Every key of a tenant table now includes organization_id: the database itself refuses a
// reference to another organization's record, and the tables can be distributed by organization
// (docs/scaling.md). Primary keys become (id, organization_id), not the other way round, so that a
// lookup by id alone still uses them.

/** Tables that hung off a parent by its id only; they get the parent's organization. */
const CHILDREN = [
  { table: 'provider_hours', column: 'provider_id', parent: 'providers' },
  { table: 'provider_exceptions', column: 'provider_id', parent: 'providers' },
  { table: 'encounter_addenda', column: 'encounter_id', parent: 'encounters' },
  { table: 'webhook_delivery_attempts', column: 'delivery_id', parent: 'webhook_deliveries' },
  { table: 'bulk_export_files', column: 'export_id', parent: 'bulk_exports' },
]

/** Tables keyed by `id` alone until now. */
const KEYED_BY_ID = [
  'patients',
  'outbox_events',
  'providers',
  'provider_hours',
  'provider_exceptions',
  'appointments',
  'encounters',
  'encounter_addenda',
  'webhooks',
  'webhook_deliveries',
  'webhook_delivery_attempts',
  'documents',
  'clinical_records',
  'messages',
  'invoices',
  'payments',
  'telehealth_rooms',
  'bulk_exports',
]

/** References between tenant tables: [table, column, referenced table, on delete cascade]. */
const REFERENCES: [string, string, string, boolean][] = [
  ['appointments', 'patient_id', 'patients', false],
  ['appointments', 'provider_id', 'providers', false],
  ['encounters', 'appointment_id', 'appointments', false],
  ['encounters', 'patient_id', 'patients', false],
  ['encounters', 'provider_id', 'providers', false],
  ['encounter_addenda', 'encounter_id', 'encounters', false],
  ['provider_hours', 'provider_id', 'providers', true],
  ['provider_exceptions', 'provider_id', 'providers', true],
  ['webhook_deliveries', 'event_id', 'outbox_events', false],
  ['webhook_deliveries', 'webhook_id', 'webhooks', true],
  ['webhook_delivery_attempts', 'delivery_id', 'webhook_deliveries', true],
  ['documents', 'patient_id', 'patients', false],
  ['clinical_records', 'patient_id', 'patients', false],
  ['messages', 'patient_id', 'patients', false],
  ['messages', 'reply_to_id', 'messages', false],
  ['messages', 'thread_id', 'messages', false],
  ['invoices', 'patient_id', 'patients', false],
  ['payments', 'invoice_id', 'invoices', false],
  ['telehealth_rooms', 'appointment_id', 'appointments', false],
  ['telehealth_rooms', 'patient_id', 'patients', false],
  ['telehealth_rooms', 'provider_id', 'providers', false],
  ['bulk_export_files', 'export_id', 'bulk_exports', true],
]

/** Unique constraints without the organization: [table, constraint, columns]. */
const UNIQUE_CONSTRAINTS: [string, string, string][] = [
  ['documents', 'documents_storage_key_key', 'storage_key'],
  ['encounters', 'encounters_appointment_key', 'appointment_id'],
  ['providers', 'providers_user_key', 'user_id'],
  ['telehealth_rooms', 'telehealth_rooms_appointment_id_key', 'appointment_id'],
  ['telehealth_rooms', 'telehealth_rooms_name_key', 'name'],
  ['webhook_deliveries', 'webhook_deliveries_event_webhook_key', 'event_id, webhook_id'],
  ['webhook_deliveries', 'webhook_deliveries_message_id_key', 'message_id'],
]

const PRIMARY_KEYS: [string, string][] = [
  ['deleted_records', 'resource_type, record_id'],
  ['bulk_export_files', 'export_id, sequence'],
]

const OVERLAP = sql.raw(
  `tstzrange(starts_at, ends_at) with &&) where (status not in ('CANCELLED', 'NO_SHOW'))`,
)

const run = (db: Kysely<any>, statement: string) => sql.raw(statement).execute(db)

async function dropReferences(db: Kysely<any>): Promise<void> {
  for (const [table, column] of REFERENCES)
    await run(db, `alter table ${table} drop constraint ${table}_${column}_fkey`)
}

export async function up(db: Kysely<any>): Promise<void> {
  for (const { table, column, parent } of CHILDREN) {
    await run(db, `alter table ${table} add column organization_id integer`)
    await run(
      db,
      `update ${table} set organization_id = ${parent}.organization_id from ${parent} where ${parent}.id = ${table}.${column}`,
    )
    await run(db, `alter table ${table} alter column organization_id set not null`)
  }
  await dropReferences(db)
  for (const table of KEYED_BY_ID) {
    await run(db, `alter table ${table} drop constraint ${table}_pkey, add primary key (id, organization_id)`)
  }
  for (const [table, columns] of PRIMARY_KEYS) {
    await run(
      db,
      `alter table ${table} drop constraint ${table}_pkey, add primary key (${columns}, organization_id)`,
    )
  }
  for (const [table, name, columns] of UNIQUE_CONSTRAINTS) {
    await run(
      db,
      `alter table ${table} drop constraint ${name}, add constraint ${name} unique (${columns}, organization_id)`,
    )
  }
  await sql`drop index clinical_records_active_allergy_key`.execute(db)
  await sql`create unique index clinical_records_active_allergy_key on clinical_records (patient_id, code, organization_id)
    where kind = 'ALLERGY' and status = 'ACTIVE'`.execute(db)
  await sql`alter table appointments drop constraint appointments_no_overlap,
    add constraint appointments_no_overlap
    exclude using gist (organization_id with =, provider_id with =, ${OVERLAP}`.execute(db)
  for (const [table, column, parent, cascade] of REFERENCES) {
    await run(
      db,
      `alter table ${table} add constraint ${table}_${column}_fkey foreign key (${column}, organization_id)
        references ${parent} (id, organization_id)${cascade ? ' on delete cascade' : ''}`,
    )
  }
}

export async function down(db: Kysely<any>): Promise<void> {
  await dropReferences(db)
  await sql`alter table appointments drop constraint appointments_no_overlap,
    add constraint appointments_no_overlap exclude using gist (provider_id with =, ${OVERLAP}`.execute(db)
  await sql`drop index clinical_records_active_allergy_key`.execute(db)
  await sql`create unique index clinical_records_active_allergy_key on clinical_records (patient_id, code)
    where kind = 'ALLERGY' and status = 'ACTIVE'`.execute(db)
  for (const [table, name, columns] of UNIQUE_CONSTRAINTS) {
    await run(db, `alter table ${table} drop constraint ${name}, add constraint ${name} unique (${columns})`)
  }
  for (const [table, columns] of PRIMARY_KEYS) {
    await run(db, `alter table ${table} drop constraint ${table}_pkey, add primary key (${columns})`)
  }
  for (const table of KEYED_BY_ID) {
    await run(db, `alter table ${table} drop constraint ${table}_pkey, add primary key (id)`)
  }
  for (const [table, column, parent, cascade] of REFERENCES) {
    await run(
      db,
      `alter table ${table} add constraint ${table}_${column}_fkey foreign key (${column})
        references ${parent} (id)${cascade ? ' on delete cascade' : ''}`,
    )
  }
  for (const { table } of CHILDREN) await run(db, `alter table ${table} drop column organization_id`)
}
