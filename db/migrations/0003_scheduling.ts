import { type Kysely, sql } from 'kysely'

// Frozen: providers and their schedules, appointments, encounters.

export async function up(db: Kysely<any>): Promise<void> {
  // GiST operator classes for plain equality (provider_id WITH =) in the exclusion constraint.
  await sql`create extension if not exists btree_gist`.execute(db)

  await db.schema
    .createTable('providers')
    .addColumn('id', 'integer', (c) => c.primaryKey().generatedAlwaysAsIdentity())
    .addColumn('organization_id', 'integer', (c) => c.notNull().references('organizations.id'))
    .addColumn('user_id', 'integer', (c) => c.references('users.id'))
    .addColumn('first_name', 'text', (c) => c.notNull())
    .addColumn('last_name', 'text', (c) => c.notNull())
    .addColumn('title', 'text')
    .addColumn('specialty', 'text')
    .addColumn('npi', 'text', (c) => c.notNull().check(sql`npi ~ '^[0-9]{10}$'`))
    .addColumn('email', 'text')
    .addColumn('phone_number', 'text')
    .addColumn('active', 'boolean', (c) => c.notNull().defaultTo(true))
    .addColumn('time_zone', 'text', (c) => c.notNull())
    .addColumn('slot_minutes', 'integer', (c) =>
      c.notNull().check(sql`slot_minutes between 15 and 120 and slot_minutes % 5 = 0`),
    )
    .addColumn('created_by', 'integer', (c) => c.references('users.id'))
    .addColumn('updated_by', 'integer', (c) => c.references('users.id'))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    // Per organization: a clinician working at two practices is a provider of each.
    .addUniqueConstraint('providers_organization_npi_key', ['organization_id', 'npi'])
    .addUniqueConstraint('providers_user_key', ['user_id'])
    .execute()
  await sql`create index providers_org_last_name_idx on providers (organization_id, lower(last_name), id)`.execute(
    db,
  )

  await db.schema
    .createTable('provider_hours')
    .addColumn('id', 'integer', (c) => c.primaryKey().generatedAlwaysAsIdentity())
    .addColumn('provider_id', 'integer', (c) => c.notNull().references('providers.id').onDelete('cascade'))
    .addColumn('weekday', 'smallint', (c) => c.notNull().check(sql`weekday between 1 and 7`))
    .addColumn('start_time', 'time', (c) => c.notNull())
    .addColumn('end_time', 'time', (c) => c.notNull())
    .addCheckConstraint('provider_hours_interval_check', sql`end_time > start_time`)
    .execute()
  await db.schema
    .createIndex('provider_hours_provider_idx')
    .on('provider_hours')
    .column('provider_id')
    .execute()

  await db.schema
    .createTable('provider_exceptions')
    .addColumn('id', 'integer', (c) => c.primaryKey().generatedAlwaysAsIdentity())
    .addColumn('provider_id', 'integer', (c) => c.notNull().references('providers.id').onDelete('cascade'))
    .addColumn('date', 'date', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull().check(sql`kind in ('TIME_OFF', 'EXTRA_HOURS')`))
    .addColumn('start_time', 'time')
    .addColumn('end_time', 'time')
    .addColumn('reason', 'text')
    .addColumn('created_by', 'integer', (c) => c.references('users.id'))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addCheckConstraint(
      'provider_exceptions_interval_check',
      sql`(start_time is null and end_time is null and kind = 'TIME_OFF') or end_time > start_time`,
    )
    .execute()
  await db.schema
    .createIndex('provider_exceptions_provider_date_idx')
    .on('provider_exceptions')
    .columns(['provider_id', 'date'])
    .execute()

  await db.schema
    .createTable('appointments')
    .addColumn('id', 'integer', (c) => c.primaryKey().generatedAlwaysAsIdentity())
    .addColumn('organization_id', 'integer', (c) => c.notNull().references('organizations.id'))
    .addColumn('patient_id', 'integer', (c) => c.notNull().references('patients.id'))
    .addColumn('provider_id', 'integer', (c) => c.notNull().references('providers.id'))
    // The date and time as booked, in the zone named beside them; starts_at is the instant.
    .addColumn('appointment_date', 'date', (c) => c.notNull())
    .addColumn('appointment_time', 'time', (c) => c.notNull())
    .addColumn('time_zone', 'text', (c) => c.notNull())
    .addColumn('starts_at', 'timestamptz', (c) => c.notNull())
    .addColumn('ends_at', 'timestamptz', (c) => c.notNull())
    .addColumn('duration_minutes', 'integer', (c) =>
      c.notNull().check(sql`duration_minutes between 15 and 120`),
    )
    .addColumn('appointment_type', 'text', (c) =>
      c
        .notNull()
        .check(
          sql`appointment_type in ('OFFICE_VISIT', 'NEW_PATIENT', 'FOLLOW_UP', 'TELEHEALTH', 'ANNUAL_PHYSICAL', 'CONSULTATION', 'PROCEDURE')`,
        ),
    )
    .addColumn('priority', 'text', (c) => c.notNull().check(sql`priority in ('ROUTINE', 'URGENT')`))
    .addColumn('reason', 'text')
    .addColumn('notes', 'text')
    .addColumn('status', 'text', (c) =>
      c
        .notNull()
        .defaultTo('SCHEDULED')
        .check(
          sql`status in ('SCHEDULED', 'CONFIRMED', 'CHECKED_IN', 'IN_PROGRESS', 'COMPLETED', 'CANCELLED', 'NO_SHOW')`,
        ),
    )
    .addColumn('cancellation_reason', 'text')
    .addColumn('cancelled_at', 'timestamptz')
    .addColumn('cancelled_by', 'integer', (c) => c.references('users.id'))
    .addColumn('created_by', 'integer', (c) => c.references('users.id'))
    .addColumn('updated_by', 'integer', (c) => c.references('users.id'))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addCheckConstraint('appointments_interval_check', sql`ends_at > starts_at`)
    .execute()
  // No double booking, enforced by the database under any concurrency: a provider's appointments
  // that still hold their time never overlap. Ranges are half-open, so back-to-back is fine.
  await sql`
    alter table appointments add constraint appointments_no_overlap
    exclude using gist (provider_id with =, tstzrange(starts_at, ends_at) with &&)
    where (status not in ('CANCELLED', 'NO_SHOW'))
  `.execute(db)
  await db.schema
    .createIndex('appointments_org_starts_idx')
    .on('appointments')
    .columns(['organization_id', 'starts_at'])
    .execute()
  await db.schema
    .createIndex('appointments_patient_idx')
    .on('appointments')
    .columns(['patient_id', 'starts_at'])
    .execute()

  await db.schema
    .createTable('encounters')
    .addColumn('id', 'integer', (c) => c.primaryKey().generatedAlwaysAsIdentity())
    .addColumn('organization_id', 'integer', (c) => c.notNull().references('organizations.id'))
    .addColumn('patient_id', 'integer', (c) => c.notNull().references('patients.id'))
    .addColumn('provider_id', 'integer', (c) => c.notNull().references('providers.id'))
    .addColumn('appointment_id', 'integer', (c) => c.references('appointments.id'))
    .addColumn('encounter_date', 'date', (c) => c.notNull())
    .addColumn('encounter_type', 'text', (c) =>
      c
        .notNull()
        .check(
          sql`encounter_type in ('OFFICE_VISIT', 'NEW_PATIENT', 'FOLLOW_UP', 'TELEHEALTH', 'ANNUAL_PHYSICAL', 'CONSULTATION', 'PROCEDURE')`,
        ),
    )
    .addColumn('chief_complaint', 'text')
    .addColumn('subjective', 'text')
    .addColumn('objective', 'text')
    .addColumn('assessment', 'text')
    .addColumn('diagnoses', 'jsonb', (c) => c.notNull().defaultTo(sql`'[]'::jsonb`))
    .addColumn('plan', 'text')
    .addColumn('status', 'text', (c) =>
      c.notNull().defaultTo('DRAFT').check(sql`status in ('DRAFT', 'SIGNED', 'AMENDED')`),
    )
    .addColumn('signed_by', 'integer', (c) => c.references('users.id'))
    .addColumn('signed_at', 'timestamptz')
    .addColumn('created_by', 'integer', (c) => c.references('users.id'))
    .addColumn('updated_by', 'integer', (c) => c.references('users.id'))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addUniqueConstraint('encounters_appointment_key', ['appointment_id'])
    .addCheckConstraint(
      'encounters_signature_check',
      sql`(status = 'DRAFT') = (signed_at is null) and (signed_at is null) = (signed_by is null)`,
    )
    .execute()
  await db.schema
    .createIndex('encounters_org_date_idx')
    .on('encounters')
    .columns(['organization_id', 'encounter_date'])
    .execute()
  await db.schema.createIndex('encounters_patient_idx').on('encounters').column('patient_id').execute()

  // A signed note is a legal record: once signed, its content can only be amended by addenda.
  // The service checks this first; the trigger makes it hold for any other writer too.
  await sql`
    create function encounters_signed_note_is_final() returns trigger language plpgsql as $$
    begin
      if old.status <> 'DRAFT' and (
        new.patient_id, new.provider_id, new.appointment_id, new.encounter_date, new.encounter_type,
        new.chief_complaint, new.subjective, new.objective, new.assessment, new.diagnoses, new.plan,
        new.signed_by, new.signed_at
      ) is distinct from (
        old.patient_id, old.provider_id, old.appointment_id, old.encounter_date, old.encounter_type,
        old.chief_complaint, old.subjective, old.objective, old.assessment, old.diagnoses, old.plan,
        old.signed_by, old.signed_at
      ) then
        raise exception 'encounter % is signed; only addenda may be added', old.id
          using errcode = 'object_not_in_prerequisite_state';
      end if;
      return new;
    end
    $$
  `.execute(db)
  await sql`
    create trigger encounters_signed_note_is_final before update on encounters
    for each row execute function encounters_signed_note_is_final()
  `.execute(db)

  await db.schema
    .createTable('encounter_addenda')
    .addColumn('id', 'integer', (c) => c.primaryKey().generatedAlwaysAsIdentity())
    .addColumn('encounter_id', 'integer', (c) => c.notNull().references('encounters.id'))
    .addColumn('text', 'text', (c) => c.notNull())
    .addColumn('signed_by', 'integer', (c) => c.notNull().references('users.id'))
    .addColumn('signed_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute()
  await db.schema
    .createIndex('encounter_addenda_encounter_idx')
    .on('encounter_addenda')
    .column('encounter_id')
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('encounter_addenda').execute()
  await db.schema.dropTable('encounters').execute()
  await sql`drop function encounters_signed_note_is_final()`.execute(db)
  for (const table of ['appointments', 'provider_exceptions', 'provider_hours', 'providers']) {
    await db.schema.dropTable(table).execute()
  }
}
