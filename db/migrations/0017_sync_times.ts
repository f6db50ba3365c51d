import { type Kysely, sql } from 'kysely'

// Frozen: a change time for the two lists that had none to sync by. Audit records are written in
// batches, after the call they record (occurred_at), so a reader past a call's time could miss a
// record written later; recorded_at is the time the row was written. Deliveries change on every
// attempt and had no column saying when.

export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table audit_log add column recorded_at timestamptz`.execute(db)
  await sql`update audit_log set recorded_at = occurred_at`.execute(db)
  await sql`alter table audit_log alter column recorded_at set not null, alter column recorded_at set default now()`.execute(
    db,
  )
  await sql`create index audit_log_sync_idx on audit_log (organization_id, recorded_at, id)`.execute(db)

  await sql`alter table webhook_deliveries add column updated_at timestamptz`.execute(db)
  await sql`update webhook_deliveries set updated_at = coalesce(completed_at, last_attempt_at, created_at)`.execute(
    db,
  )
  await sql`alter table webhook_deliveries alter column updated_at set not null, alter column updated_at set default now()`.execute(
    db,
  )
  await sql`
    create function touch_updated_at() returns trigger language plpgsql as $$
    begin
      new.updated_at := now();
      return new;
    end $$`.execute(db)
  await sql`create trigger webhook_deliveries_updated_at before update on webhook_deliveries
    for each row execute function touch_updated_at()`.execute(db)
  await sql`create index webhook_deliveries_sync_idx on webhook_deliveries (organization_id, webhook_id, updated_at, id)`.execute(
    db,
  )
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop index webhook_deliveries_sync_idx`.execute(db)
  await sql`drop trigger webhook_deliveries_updated_at on webhook_deliveries`.execute(db)
  await sql`drop function touch_updated_at()`.execute(db)
  await sql`alter table webhook_deliveries drop column updated_at`.execute(db)
  await sql`drop index audit_log_sync_idx`.execute(db)
  await sql`alter table audit_log drop column recorded_at`.execute(db)
}
