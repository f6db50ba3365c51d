import { type Kysely, sql } from 'kysely'

// Frozen: SMART App Launch on the embedded issuer. Patients' own accounts, apps registered by a practice, the browser
// sign-ins of its pages, what a user granted an app, EHR launch contexts, single-use authorization
// codes, and the sessions an app's tokens belong to. Secrets, codes, launch values and cookies are
// stored as SHA-256 or scrypt hashes only. These tables are looked up by client id or hash before
// the organization is known (local to a distributed database's coordinator, db/sharding-plan.ts), so
// their patients and encounters are checked by the service, not by foreign keys.

export async function up(db: Kysely<any>): Promise<void> {
  // A PATIENT account is the account of exactly one patient record, and a record has one at most.
  // No foreign key: users is copied to every node of a distributed database and patients are spread
  // by organization (db/sharding-plan.ts), so the service checks the patient when it links one.
  await sql`alter table users add column patient_id integer`.execute(db)
  await sql`create unique index users_patient_idx on users (patient_id) where patient_id is not null`.execute(
    db,
  )

  await sql`
    create table smart_apps (
      id integer generated always as identity primary key,
      organization_id integer not null references organizations (id),
      client_id text not null unique,
      name text not null,
      confidential boolean not null,
      secret_hash text,
      jwks jsonb,
      jwks_url text,
      redirect_uris text[] not null,
      scopes text[] not null,
      launch_url text,
      created_by integer not null references users (id),
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now(),
      disabled_at timestamptz,
      constraint smart_apps_public_has_no_credential
        check (confidential or (secret_hash is null and jwks is null and jwks_url is null)),
      constraint smart_apps_one_key_source check (jwks is null or jwks_url is null)
    )`.execute(db)
  await sql`create index smart_apps_organization_idx on smart_apps (organization_id, id)`.execute(db)

  await sql`
    create table browser_sessions (
      id text primary key,
      token_hash text not null unique,
      user_id integer not null references users (id) on delete cascade,
      expires_at timestamptz not null,
      revoked_at timestamptz,
      created_at timestamptz not null default now()
    )`.execute(db)
  await sql`create index browser_sessions_user_idx on browser_sessions (user_id)`.execute(db)

  await sql`
    create table app_grants (
      id integer generated always as identity primary key,
      organization_id integer not null references organizations (id),
      user_id integer not null references users (id) on delete cascade,
      app_id integer not null references smart_apps (id) on delete cascade,
      scopes text[] not null,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now(),
      revoked_at timestamptz,
      revoked_by integer references users (id)
    )`.execute(db)
  // One standing grant per user and app: a new consent replaces it.
  await sql`create unique index app_grants_standing_idx on app_grants (user_id, app_id) where revoked_at is null`.execute(
    db,
  )
  await sql`create index app_grants_organization_idx on app_grants (organization_id, id)`.execute(db)

  await sql`
    create table launch_contexts (
      launch_hash text primary key,
      organization_id integer not null references organizations (id),
      created_by integer not null references users (id) on delete cascade,
      app_id integer references smart_apps (id) on delete cascade,
      patient_id integer not null,
      encounter_id integer,
      expires_at timestamptz not null,
      used_at timestamptz,
      created_at timestamptz not null default now()
    )`.execute(db)

  await sql`
    alter table sessions
      add column app_grant_id integer references app_grants (id),
      add column browser_session_id text references browser_sessions (id),
      add column launch_patient_id integer,
      add column launch_encounter_id integer`.execute(db)
  await sql`create index sessions_app_grant_idx on sessions (app_grant_id) where app_grant_id is not null`.execute(
    db,
  )
  await sql`create index sessions_browser_session_idx on sessions (browser_session_id) where browser_session_id is not null`.execute(
    db,
  )

  await sql`
    create table authorization_codes (
      code_hash text primary key,
      organization_id integer not null references organizations (id),
      app_id integer not null references smart_apps (id) on delete cascade,
      user_id integer not null references users (id) on delete cascade,
      app_grant_id integer not null references app_grants (id),
      browser_session_id text references browser_sessions (id),
      redirect_uri text not null,
      scopes text[] not null,
      code_challenge text not null,
      nonce text,
      patient_id integer,
      encounter_id integer,
      need_patient_banner boolean not null,
      expires_at timestamptz not null,
      used_at timestamptz,
      session_id text references sessions (id),
      created_at timestamptz not null default now()
    )`.execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop table authorization_codes`.execute(db)
  await sql`
    alter table sessions
      drop column launch_encounter_id,
      drop column launch_patient_id,
      drop column browser_session_id,
      drop column app_grant_id`.execute(db)
  await sql`drop table launch_contexts`.execute(db)
  await sql`drop table app_grants`.execute(db)
  await sql`drop table browser_sessions`.execute(db)
  await sql`drop table smart_apps`.execute(db)
  await sql`alter table users drop column patient_id`.execute(db)
}
