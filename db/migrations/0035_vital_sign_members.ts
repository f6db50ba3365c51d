import { type Kysely, sql } from 'kysely'

// Frozen: each measurement of a vital-signs record is a record of its own (kind VITAL_SIGN), served
// as one FHIR Observation per measurement with an id, versions and history like any record. The
// database keeps them, in the transaction that writes their panel, whoever writes it (a REST route,
// a FHIR interaction, a seed script): a panel's `member_ids` names its members by LOINC code, and
// a member's row copies the panel's patient, encounter, time and its own values
// (`{panelId, <field>: value}`). A measurement a correction removes is entered in error; the
// panel entered in error takes its members with it.

/** Each member's LOINC code and the panel's data fields it holds, in the panel's order. */
const MEMBERS = [
  { code: '85354-9', fields: ['systolic', 'diastolic'] },
  { code: '8867-4', fields: ['heartRate'] },
  { code: '9279-1', fields: ['respiratoryRate'] },
  { code: '8310-5', fields: ['temperatureCelsius'] },
  { code: '59408-5', fields: ['spo2'] },
  { code: '8302-2', fields: ['heightCm'] },
  { code: '29463-7', fields: ['weightKg'] },
  { code: '39156-5', fields: ['bmi'] },
  { code: '72514-3', fields: ['painScore'] },
]

const MEMBER_FIELDS = sql`
  create function vital_sign_members() returns jsonb language sql immutable as $$
    select ${sql.lit(JSON.stringify(MEMBERS))}::jsonb
  $$`

// Before a panel is written: the id of each member it holds, kept from the panel's last version
// where the member was there, a new one of the table's sequence otherwise (in the panel's order).
const MEMBER_IDS = sql`
  create function vital_sign_member_ids() returns trigger language plpgsql as $$
  declare
    member record;
    kept jsonb := case when tg_op = 'UPDATE' then coalesce(old.member_ids, '{}') else '{}' end;
    ids jsonb := '{}';
  begin
    for member in select m ->> 'code' as code, m -> 'fields' as fields
                  from jsonb_array_elements(vital_sign_members()) with ordinality as members(m, n) order by n loop
      if exists (select from jsonb_array_elements_text(member.fields) as field
                 where jsonb_typeof(new.data -> field) = 'number') then
        ids := ids || jsonb_build_object(member.code,
          coalesce(kept -> member.code, to_jsonb(nextval(pg_get_serial_sequence('clinical_records', 'id')))));
      end if;
    end loop;
    new.member_ids := ids;
    return new;
  end $$`

// After a panel is written: its members as it now says, each changed only where it differs (so its
// version moves only then); a member it no longer holds is entered in error.
const WRITE_MEMBERS = sql`
  create function write_vital_sign_members() returns trigger language plpgsql as $$
  declare
    member record;
    measured jsonb;
  begin
    for member in select key as code, value::integer as id from jsonb_each_text(new.member_ids) loop
      select jsonb_object_agg(field, new.data -> field) into measured
      from jsonb_array_elements(vital_sign_members()) as m, jsonb_array_elements_text(m -> 'fields') as field
      where m ->> 'code' = member.code and jsonb_typeof(new.data -> field) = 'number';
      insert into clinical_records as m (id, organization_id, patient_id, encounter_id, kind, status, code,
        effective_at, data, recorded_by, recorded_at, updated_by, created_at, updated_at,
        entered_in_error_at, entered_in_error_by, entered_in_error_reason)
      overriding system value
      values (member.id, new.organization_id, new.patient_id, new.encounter_id, 'VITAL_SIGN',
        case when new.entered_in_error_at is null then 'FINAL' else 'ENTERED_IN_ERROR' end, member.code,
        new.effective_at, jsonb_build_object('panelId', new.id) || measured, new.recorded_by, new.recorded_at,
        new.updated_by, new.updated_at, new.updated_at, new.entered_in_error_at, new.entered_in_error_by,
        new.entered_in_error_reason)
      on conflict (id, organization_id) do update set
        status = case when excluded.entered_in_error_at is null then 'AMENDED' else 'ENTERED_IN_ERROR' end,
        encounter_id = excluded.encounter_id, effective_at = excluded.effective_at, data = excluded.data,
        updated_by = excluded.updated_by, entered_in_error_at = excluded.entered_in_error_at,
        entered_in_error_by = excluded.entered_in_error_by,
        entered_in_error_reason = excluded.entered_in_error_reason
      where (m.encounter_id, m.effective_at, m.data, m.entered_in_error_at)
        is distinct from (excluded.encounter_id, excluded.effective_at, excluded.data, excluded.entered_in_error_at);
    end loop;
    if tg_op = 'UPDATE' then
      update clinical_records
      set status = 'ENTERED_IN_ERROR', updated_by = new.updated_by, entered_in_error_at = now(),
        entered_in_error_by = new.updated_by, entered_in_error_reason = 'Removed from its vital signs panel'
      where organization_id = new.organization_id and kind = 'VITAL_SIGN' and entered_in_error_at is null
        and id in (select value::integer from jsonb_each_text(coalesce(old.member_ids, '{}'))
                   except select value::integer from jsonb_each_text(new.member_ids));
    end if;
    return null;
  end $$`

const KINDS = ['VITAL_SIGNS', 'LAB_RESULT', 'CONDITION', 'ALLERGY', 'MEDICATION', 'ENCOUNTER_DIAGNOSIS']

export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table clinical_records drop constraint clinical_records_kind_check`.execute(db)
  await sql`alter table clinical_records add constraint clinical_records_kind_check
    check (kind in (${sql.join([...KINDS, 'VITAL_SIGN'].map((kind) => sql.lit(kind)))}))`.execute(db)
  await sql`alter table clinical_records add column member_ids jsonb`.execute(db)
  // FHIR's Observation search by patient and code (a measurement's LOINC code), in id order.
  await sql`create index clinical_records_code_idx on clinical_records (organization_id, patient_id, code, id)
    where code is not null`.execute(db)
  await MEMBER_FIELDS.execute(db)
  await MEMBER_IDS.execute(db)
  await WRITE_MEMBERS.execute(db)
  await sql`create trigger clinical_records_member_ids before insert or update on clinical_records
    for each row when (new.kind = 'VITAL_SIGNS') execute function vital_sign_member_ids()`.execute(db)
  await sql`create trigger clinical_records_members after insert or update on clinical_records
    for each row when (new.kind = 'VITAL_SIGNS') execute function write_vital_sign_members()`.execute(db)

  // The members of the panels stored so far. Naming their ids is no change of the panels
  // themselves: their versions, change times and history stay as they are.
  await sql`alter table clinical_records disable trigger clinical_records_version`.execute(db)
  await sql`alter table clinical_records disable trigger clinical_records_history`.execute(db)
  await sql`update clinical_records set member_ids = null where kind = 'VITAL_SIGNS'`.execute(db)
  await sql`alter table clinical_records enable trigger clinical_records_history`.execute(db)
  await sql`alter table clinical_records enable trigger clinical_records_version`.execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop trigger clinical_records_members on clinical_records`.execute(db)
  await sql`drop trigger clinical_records_member_ids on clinical_records`.execute(db)
  await sql`drop function write_vital_sign_members()`.execute(db)
  await sql`drop function vital_sign_member_ids()`.execute(db)
  await sql`drop function vital_sign_members()`.execute(db)
  const members = await sql<{
    id: number
  }>`delete from clinical_records where kind = 'VITAL_SIGN' returning id`.execute(db)
  await sql`delete from record_history where table_name = 'clinical_records'
    and record_id = any(${members.rows.map(({ id }) => id)}::integer[])`.execute(db)
  await sql`drop index clinical_records_code_idx`.execute(db)
  await sql`alter table clinical_records drop column member_ids`.execute(db)
  await sql`alter table clinical_records drop constraint clinical_records_kind_check`.execute(db)
  await sql`alter table clinical_records add constraint clinical_records_kind_check
    check (kind in (${sql.join(KINDS.map((kind) => sql.lit(kind)))}))`.execute(db)
}
