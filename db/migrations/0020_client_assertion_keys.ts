import { type Kysely, sql } from 'kysely'

// Frozen: SMART Backend Services (RFC 7523 private_key_jwt). A confidential client may register
// public keys, stored as a JWKS or fetched from a JWKS URL, and sign its token requests with the
// private key instead of sending a secret. A client registered with keys has its secret switched
// off (secret_enabled) until a rotation gives it one. Every assertion's jti is kept until the
// assertion expires, so that a captured assertion cannot be replayed.

export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    alter table clients
      add column secret_enabled boolean not null default true,
      add column jwks jsonb,
      add column jwks_url text,
      add constraint clients_one_key_source check (jwks is null or jwks_url is null),
      add constraint clients_some_credential
        check (secret_enabled or jwks is not null or jwks_url is not null)`.execute(db)
  await sql`
    create table client_assertion_jtis (
      client_id integer not null references clients (id) on delete cascade,
      jti text not null,
      expires_at timestamptz not null,
      primary key (client_id, jti)
    )`.execute(db)
  await sql`create index client_assertion_jtis_expiry_idx on client_assertion_jtis (expires_at)`.execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop table client_assertion_jtis`.execute(db)
  await sql`
    alter table clients
      drop constraint clients_some_credential,
      drop constraint clients_one_key_source,
      drop column jwks_url,
      drop column jwks,
      drop column secret_enabled`.execute(db)
}
