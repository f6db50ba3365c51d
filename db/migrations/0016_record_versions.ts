import { type Kysely, sql } from 'kysely'

// Frozen: versions for conditional writes, tombstones and change positions for sync clients.
// Clinical records already had a version, which the application kept; the database keeps it now.

/** Tables whose rows an integrator edits and syncs; each gets a version the database keeps. */
const VERSIONED = [
  'patients',
  'providers',
  'appointments',
  'encounters',
  'clinical_records',
  'invoices',
  'messages',
  'webhooks',
  'documents',
] as const

// Every change of a row counts, whoever makes it: the version and the change time are set here,
// so no UPDATE in the code can forget them.
const BUMP_VERSION = sql`
  create function bump_record_version() returns trigger language plpgsql as $$
  begin
    new.version := old.version + 1;
    new.updated_at := now();
    return new;
  end $$`

// A removed record leaves a tombstone for sync readers; tg_argv[0] is the resource's API name.
// The patient of a record, where it has one, scopes the tombstone like the record's own list.
const RECORD_DELETION = sql`
  create function record_deletion() returns trigger language plpgsql as $$
  begin
    insert into deleted_records (resource_type, record_id, organization_id, patient_id)
    values (tg_argv[0], old.id, old.organization_id, (to_jsonb(old) ->> 'patient_id')::integer)
    on conflict do nothing;
    return null;
  end $$`

export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table messages add column updated_at timestamptz`.execute(db)
  await sql`update messages set updated_at = coalesce(read_at, created_at)`.execute(db)
  await sql`alter table messages alter column updated_at set not null, alter column updated_at set default now()`.execute(
    db,
  )
  await BUMP_VERSION.execute(db)
  for (const table of VERSIONED) {
    await sql`alter table ${sql.table(table)} add column if not exists version integer not null default 1`.execute(
      db,
    )
    await sql`create trigger ${sql.id(`${table}_version`)} before update on ${sql.table(table)}
      for each row execute function bump_record_version()`.execute(db)
  }

  await sql`
    create table deleted_records (
      resource_type text not null,
      record_id integer not null,
      organization_id integer not null references organizations (id),
      patient_id integer,
      deleted_at timestamptz not null default now(),
      primary key (resource_type, record_id)
    )`.execute(db)
  await sql`create index deleted_records_sync_idx
    on deleted_records (organization_id, resource_type, deleted_at, record_id)`.execute(db)
  await RECORD_DELETION.execute(db)
  for (const [table, resource] of [
    ['patients', 'patient'],
    ['documents', 'document'],
  ] as const) {
    await sql`create trigger ${sql.id(`${table}_tombstone`)} after update of deleted_at on ${sql.table(table)}
      for each row when (old.deleted_at is null and new.deleted_at is not null)
      execute function record_deletion(${sql.lit(resource)})`.execute(db)
  }
  await sql`create trigger webhooks_tombstone after delete on webhooks
    for each row execute function record_deletion('webhook')`.execute(db)

  // Sync readers walk each list by (updated_at, id) within the organization.
  await sql`create index patients_sync_idx on patients (organization_id, updated_at, id) where deleted_at is null`.execute(
    db,
  )
  await sql`create index documents_sync_idx on documents (organization_id, updated_at, id) where deleted_at is null`.execute(
    db,
  )
  for (const table of VERSIONED.filter((name) => name !== 'patients' && name !== 'documents')) {
    await sql`create index ${sql.id(`${table}_sync_idx`)} on ${sql.table(table)} (organization_id, updated_at, id)`.execute(
      db,
    )
  }

  // The change feed reads events in the order their transactions became visible: an event is
  // handed out only once every transaction with a smaller id has ended (see the feed's query).
  await sql`alter table outbox_events add column transaction_id xid8 not null default pg_current_xact_id()`.execute(
    db,
  )
  await sql`create index outbox_events_feed_idx on outbox_events (organization_id, transaction_id, id)`.execute(
    db,
  )
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop index outbox_events_feed_idx`.execute(db)
  await sql`alter table outbox_events drop column transaction_id`.execute(db)
  await sql`drop trigger webhooks_tombstone on webhooks`.execute(db)
  await sql`drop trigger documents_tombstone on documents`.execute(db)
  await sql`drop trigger patients_tombstone on patients`.execute(db)
  await sql`drop function record_deletion()`.execute(db)
  await sql`drop table deleted_records`.execute(db)
  for (const table of VERSIONED) {
    await sql`drop index ${sql.id(`${table}_sync_idx`)}`.execute(db)
    await sql`drop trigger ${sql.id(`${table}_version`)} on ${sql.table(table)}`.execute(db)
    if (table !== 'clinical_records')
      await sql`alter table ${sql.table(table)} drop column version`.execute(db)
  }
  await sql`drop function bump_record_version()`.execute(db)
  await sql`alter table messages drop column updated_at`.execute(db)
}
