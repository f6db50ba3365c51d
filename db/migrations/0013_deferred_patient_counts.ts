import { type Kysely, sql } from 'kysely'

// Frozen: a registration held its count row locked from its INSERT until commit, so concurrent
// registrations that drew the same row waited on each other's remaining work. The counts now
// change at commit (deferred triggers), and over 64 rows per (organization, status) instead of 16.
// Existing rows stay valid: the total is still the sum over whatever rows exist.

function trackFunction(shards: number) {
  return sql`
    create or replace function patient_counts_track() returns trigger language plpgsql as $$
    begin
      if tg_op in ('UPDATE', 'DELETE') and old.deleted_at is null then
        insert into patient_counts values (old.organization_id, old.status, floor(random() * ${sql.lit(shards)})::smallint, -1)
        on conflict (organization_id, status, shard) do update set live_count = patient_counts.live_count - 1;
      end if;
      if tg_op in ('INSERT', 'UPDATE') and new.deleted_at is null then
        insert into patient_counts values (new.organization_id, new.status, floor(random() * ${sql.lit(shards)})::smallint, 1)
        on conflict (organization_id, status, shard) do update set live_count = patient_counts.live_count + 1;
      end if;
      return null;
    end
    $$`
}

const UPDATE_CONDITION = sql`old.status is distinct from new.status or old.deleted_at is distinct from new.deleted_at
  or old.organization_id is distinct from new.organization_id`

async function createTriggers(db: Kysely<any>, timing: 'deferred' | 'immediate') {
  const constraint = timing === 'deferred' ? sql`constraint` : sql``
  const deferral = timing === 'deferred' ? sql`deferrable initially deferred` : sql``
  await sql`drop trigger patient_counts_on_insert_delete on patients`.execute(db)
  await sql`drop trigger patient_counts_on_update on patients`.execute(db)
  await sql`
    create ${constraint} trigger patient_counts_on_insert_delete after insert or delete on patients
    ${deferral} for each row execute function patient_counts_track()`.execute(db)
  await sql`
    create ${constraint} trigger patient_counts_on_update after update of status, deleted_at, organization_id
    on patients ${deferral} for each row when (${UPDATE_CONDITION})
    execute function patient_counts_track()`.execute(db)
}

export async function up(db: Kysely<any>): Promise<void> {
  await trackFunction(64).execute(db)
  await createTriggers(db, 'deferred')
}

export async function down(db: Kysely<any>): Promise<void> {
  await trackFunction(16).execute(db)
  await createTriggers(db, 'immediate')
}
