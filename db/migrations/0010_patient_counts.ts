import { type Kysely, sql } from 'kysely'

// Frozen: live patient counts per organization and status, kept by a trigger, so that a list
// without filters (or by status) knows its total without counting a million rows. Increments
// spread over 16 rows per (organization, status) so concurrent registrations rarely wait on each
// other; the total is their sum.

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('patient_counts')
    .addColumn('organization_id', 'integer', (c) => c.notNull().references('organizations.id'))
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('shard', 'smallint', (c) => c.notNull())
    .addColumn('live_count', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('patient_counts_pkey', ['organization_id', 'status', 'shard'])
    .execute()

  await sql`
    create function patient_counts_track() returns trigger language plpgsql as $$
    begin
      if tg_op in ('UPDATE', 'DELETE') and old.deleted_at is null then
        insert into patient_counts values (old.organization_id, old.status, floor(random() * 16)::smallint, -1)
        on conflict (organization_id, status, shard) do update set live_count = patient_counts.live_count - 1;
      end if;
      if tg_op in ('INSERT', 'UPDATE') and new.deleted_at is null then
        insert into patient_counts values (new.organization_id, new.status, floor(random() * 16)::smallint, 1)
        on conflict (organization_id, status, shard) do update set live_count = patient_counts.live_count + 1;
      end if;
      return null;
    end
    $$`.execute(db)
  // Only changes that move a patient between (organization, status, live) buckets touch the counts.
  await sql`
    create trigger patient_counts_on_insert_delete after insert or delete on patients
    for each row execute function patient_counts_track()`.execute(db)
  await sql`
    create trigger patient_counts_on_update after update of status, deleted_at, organization_id on patients
    for each row
    when (old.status is distinct from new.status or old.deleted_at is distinct from new.deleted_at
      or old.organization_id is distinct from new.organization_id)
    execute function patient_counts_track()`.execute(db)

  await sql`
    insert into patient_counts (organization_id, status, shard, live_count)
    select organization_id, status, 0, count(*) from patients where deleted_at is null
    group by organization_id, status`.execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop trigger patient_counts_on_update on patients`.execute(db)
  await sql`drop trigger patient_counts_on_insert_delete on patients`.execute(db)
  await sql`drop function patient_counts_track()`.execute(db)
  await db.schema.dropTable('patient_counts').execute()
}
