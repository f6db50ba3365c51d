import { type Kysely, sql } from 'kysely'

// Frozen: the diagnoses of a signed encounter's note as clinical records of their own
// (ENCOUNTER_DIAGNOSIS), one per diagnosis, so that each is a Condition of category
// encounter-diagnosis with an id, versions and searches like any other. Written when the note is
// signed (it never changes after); the encounters signed before are filled in here, recorded by
// their signer at their signing time.

const KINDS = ['VITAL_SIGNS', 'LAB_RESULT', 'CONDITION', 'ALLERGY', 'MEDICATION']

async function allowKinds(db: Kysely<any>, kinds: string[]): Promise<void> {
  await sql`alter table clinical_records drop constraint clinical_records_kind_check`.execute(db)
  await sql`alter table clinical_records add constraint clinical_records_kind_check
    check (kind in (${sql.join(kinds.map((kind) => sql.lit(kind)))}))`.execute(db)
}

export async function up(db: Kysely<any>): Promise<void> {
  await allowKinds(db, [...KINDS, 'ENCOUNTER_DIAGNOSIS'])
  await sql`
    insert into clinical_records (organization_id, patient_id, encounter_id, kind, status, code, effective_at,
      data, recorded_by, recorded_at, updated_by, created_at, updated_at)
    select e.organization_id, e.patient_id, e.id, 'ENCOUNTER_DIAGNOSIS', 'RECORDED', d.value->>'icd10Code',
      e.encounter_date::timestamp at time zone 'UTC', d.value, e.signed_by, e.signed_at, e.signed_by,
      e.signed_at, e.signed_at
    from encounters e cross join lateral jsonb_array_elements(e.diagnoses) with ordinality as d(value, n)
    where e.signed_at is not null and e.signed_by is not null
    order by e.id, d.n`.execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`delete from clinical_records where kind = 'ENCOUNTER_DIAGNOSIS'`.execute(db)
  await allowKinds(db, KINDS)
}
