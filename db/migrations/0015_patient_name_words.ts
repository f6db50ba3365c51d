import { type Kysely, sql } from 'kysely'

// Frozen: a search for two common names ("kowalski olga") intersected trigram posting lists that
// grow with the practice (docs/performance-log.md). Each live patient's name
// words are now kept alone and in ordered pairs, so two name words of a query seek one narrow
// b-tree range whatever the practice's size. Collation "C" makes a word prefix a plain key range.

// Words are the runs between ASCII punctuation and spaces; letters outside ASCII stay inside words.
// At most 12 distinct words per name keep the pairs per patient bounded (132).
const NAME_WORDS = sql`
  create function patient_name_words(first_name text, middle_name text, last_name text) returns text[]
  language sql immutable parallel safe as $$
    select coalesce(array_agg(word order by position), '{}') from (
      select word, min(position) as position
      from regexp_split_to_table(lower(concat_ws(' ', first_name, middle_name, last_name)),
        '[^0-9a-z\\u0080-\\U0010ffff]+') with ordinality as split(word, position)
      where word <> ''
      group by word order by min(position) limit 12
    ) as words
  $$`

// Every word alone (next_word '') and every ordered pair of two different words.
const NAME_SEARCH_ENTRIES = sql`
  create function patient_name_search_entries(first_name text, middle_name text, last_name text)
  returns table (word text, next_word text) language sql immutable parallel safe as $$
    with words as (select unnest(patient_name_words(first_name, middle_name, last_name)) as word)
    select word, '' from words
    union all
    select a.word, b.word from words as a cross join words as b where a.word <> b.word
  $$`

const TRACK = sql`
  create function patient_name_words_track() returns trigger language plpgsql as $$
  begin
    if tg_op in ('UPDATE', 'DELETE') and old.deleted_at is null then
      delete from patient_name_words as stored
      using patient_name_search_entries(old.first_name, old.middle_name, old.last_name) as entry
      where stored.organization_id = old.organization_id and stored.word = entry.word
        and stored.next_word = entry.next_word and stored.patient_id = old.id;
    end if;
    if tg_op in ('INSERT', 'UPDATE') and new.deleted_at is null then
      insert into patient_name_words (organization_id, word, next_word, patient_id)
      select new.organization_id, entry.word, entry.next_word, new.id
      from patient_name_search_entries(new.first_name, new.middle_name, new.last_name) as entry;
    end if;
    return null;
  end
  $$`

export async function up(db: Kysely<any>): Promise<void> {
  await NAME_WORDS.execute(db)
  await NAME_SEARCH_ENTRIES.execute(db)
  await sql`
    create table patient_name_words (
      organization_id integer not null,
      word text collate "C" not null,
      next_word text collate "C" not null,
      patient_id integer not null,
      primary key (organization_id, word, next_word, patient_id)
    )`.execute(db)
  await TRACK.execute(db)
  await sql`
    create trigger patient_name_words_on_insert_delete after insert or delete on patients
    for each row execute function patient_name_words_track()`.execute(db)
  await sql`
    create trigger patient_name_words_on_update
    after update of first_name, middle_name, last_name, deleted_at, organization_id on patients
    for each row when (old.first_name is distinct from new.first_name
      or old.middle_name is distinct from new.middle_name or old.last_name is distinct from new.last_name
      or old.deleted_at is distinct from new.deleted_at or old.organization_id is distinct from new.organization_id)
    execute function patient_name_words_track()`.execute(db)
  await fillPatientNameWords(db)
}

const FILL_BATCH = 50_000

/**
 * Rebuilds the name words of live patients in bulk (after loading patients with triggers off), a
 * range of ids per statement so that each stays well within the statement timeout.
 */
export async function fillPatientNameWords(db: Kysely<any>, organizationId?: number): Promise<void> {
  const scope = organizationId === undefined ? sql`true` : sql`organization_id = ${organizationId}`
  const bounds = await sql<{ low: number | null; high: number | null }>`
    select min(id) as low, max(id) as high from patients where ${scope}`.execute(db)
  const { low, high } = bounds.rows[0] ?? { low: null, high: null }
  if (low === null || high === null) return
  for (let from = low; from <= high; from += FILL_BATCH) {
    await sql`
      insert into patient_name_words (organization_id, word, next_word, patient_id)
      select organization_id, entry.word, entry.next_word, id
      from patients, patient_name_search_entries(first_name, middle_name, last_name) as entry
      where ${scope} and deleted_at is null and id >= ${from} and id < ${from + FILL_BATCH}
      on conflict do nothing`.execute(db)
  }
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop trigger patient_name_words_on_update on patients`.execute(db)
  await sql`drop trigger patient_name_words_on_insert_delete on patients`.execute(db)
  await sql`drop function patient_name_words_track()`.execute(db)
  await sql`drop table patient_name_words`.execute(db)
  await sql`drop function patient_name_search_entries(text, text, text)`.execute(db)
  await sql`drop function patient_name_words(text, text, text)`.execute(db)
}
