import { type Kysely, sql } from 'kysely'

// Frozen: FHIR Bulk Data exports. A job is claimed by one instance at a time (a lease, renewed as it
// goes) and advances its position only together with the file it finished, so a job resumed after
// a crash rewrites at most the one file that was under way.

export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create table bulk_exports (
      id uuid primary key,
      organization_id integer not null references organizations (id),
      requested_by integer not null references users (id),
      level text not null check (level in ('system', 'patient', 'group')),
      group_id text,
      types text[] not null,
      type_filters jsonb not null default '{}',
      since timestamptz,
      request_url text not null,
      status text not null default 'accepted' check (status in ('accepted', 'in-progress', 'completed', 'failed')),
      transaction_time timestamptz,
      position jsonb not null default '{"typeIndex": 0, "after": 0, "sequence": 0}',
      exported integer not null default 0,
      issues text[] not null default '{}',
      error text,
      lease_owner text,
      lease_until timestamptz,
      created_at timestamptz not null default now(),
      completed_at timestamptz,
      expires_at timestamptz not null
    )`.execute(db)
  await sql`create index bulk_exports_pending_idx on bulk_exports (created_at) where status in ('accepted', 'in-progress')`.execute(
    db,
  )
  await sql`create index bulk_exports_expiry_idx on bulk_exports (expires_at)`.execute(db)
  await sql`
    create table bulk_export_files (
      export_id uuid not null references bulk_exports (id) on delete cascade,
      sequence integer not null,
      resource_type text not null,
      storage_key text not null,
      count integer not null,
      size_bytes bigint not null,
      primary key (export_id, sequence)
    )`.execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop table bulk_export_files`.execute(db)
  await sql`drop table bulk_exports`.execute(db)
}
