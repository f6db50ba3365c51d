import { type Kysely, sql } from 'kysely'

// Frozen: the demographics of US Core 6.1.0's Patient (USCDI): race and ethnicity as OMB
// categories with detailed CDC codes and the patient's own words, sex assigned at birth and gender
// identity. Codes are checked by the service against the value sets; the columns only keep the
// shapes whole: a race has categories, a detailed code or text only with them.

export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    alter table patients
      add column race_categories text[],
      add column race_detailed text[],
      add column race_text text,
      add column ethnicity_category text,
      add column ethnicity_detailed text[],
      add column ethnicity_text text,
      add column birth_sex text,
      add column gender_identity text,
      add constraint patients_race_whole check (
        race_categories is not null and cardinality(race_categories) > 0 and race_detailed is not null
        or race_categories is null and race_detailed is null and race_text is null),
      add constraint patients_ethnicity_whole check (
        ethnicity_category is not null and ethnicity_detailed is not null
        or ethnicity_category is null and ethnicity_detailed is null and ethnicity_text is null)`.execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`
    alter table patients
      drop column race_categories,
      drop column race_detailed,
      drop column race_text,
      drop column ethnicity_category,
      drop column ethnicity_detailed,
      drop column ethnicity_text,
      drop column birth_sex,
      drop column gender_identity`.execute(db)
}
