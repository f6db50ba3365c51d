import { type Kysely, sql } from 'kysely'

// Frozen: every earlier version of a versioned record, kept by the database in the transaction that
// replaces or removes it, whoever writes (a REST route, a FHIR interaction, a worker). The row is
// kept whole as jsonb, so a column a later migration adds needs nothing here: it reads back as null
// (jsonb_populate_record over the table's current row type).

/** The tables of migration 0016, whose rows carry a version the database keeps. */
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

/** Columns a table's history leaves out: a webhook's signing secrets, once replaced, are kept nowhere. */
const LEFT_OUT: Partial<Record<(typeof VERSIONED)[number], string[]>> = {
  webhooks: ['secret', 'previous_secret'],
}

// tg_op is 'DELETE' for a removed record: its last version is kept, marked removed. The trigger's
// arguments (tg_argv) name the columns left out.
const KEEP_VERSION = sql`
  create function keep_record_version() returns trigger language plpgsql as $$
  begin
    insert into record_history (organization_id, table_name, record_id, version, row, removed)
    values (old.organization_id, tg_table_name, old.id, old.version,
      to_jsonb(old) - coalesce(tg_argv, '{}'::text[]), tg_op = 'DELETE');
    return null;
  end $$`

export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create table record_history (
      organization_id integer not null references organizations (id),
      table_name text not null,
      record_id integer not null,
      version integer not null,
      row jsonb not null,
      ended_at timestamptz not null default now(),
      removed boolean not null default false,
      primary key (organization_id, table_name, record_id, version)
    )`.execute(db)
  // A type's history since an instant (FHIR's type-level _history with _since).
  await sql`create index record_history_time_idx on record_history (organization_id, table_name, ended_at)`.execute(
    db,
  )
  await KEEP_VERSION.execute(db)
  for (const table of VERSIONED) {
    const leftOut = (LEFT_OUT[table] ?? []).map((column) => sql.lit(column))
    await sql`create trigger ${sql.id(`${table}_history`)} after update or delete on ${sql.table(table)}
      for each row execute function keep_record_version(${sql.join(leftOut)})`.execute(db)
  }
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const table of VERSIONED) {
    await sql`drop trigger ${sql.id(`${table}_history`)} on ${sql.table(table)}`.execute(db)
  }
  await sql`drop function keep_record_version()`.execute(db)
  await sql`drop table record_history`.execute(db)
}
