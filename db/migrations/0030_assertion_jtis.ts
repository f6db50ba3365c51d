import { type Kysely, sql } from 'kysely'

// Frozen: client assertions (RFC 7523 private_key_jwt) are made by SMART apps as well as by
// Backend Services clients, so the jtis seen are kept by the OAuth client id the assertion names
// (`iss`), whichever of the two registered it. Client ids are unique among clients and among
// apps; apps' all start with `app-`. The jtis still live move over.

export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create table assertion_jtis (
      client_id text not null,
      jti text not null,
      expires_at timestamptz not null,
      primary key (client_id, jti)
    )`.execute(db)
  await sql`create index assertion_jtis_expiry_idx on assertion_jtis (expires_at)`.execute(db)
  await sql`
    insert into assertion_jtis (client_id, jti, expires_at)
    select clients.client_id, jtis.jti, jtis.expires_at
    from client_assertion_jtis jtis join clients on clients.id = jtis.client_id
    where jtis.expires_at > now()`.execute(db)
  await sql`drop table client_assertion_jtis`.execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`
    create table client_assertion_jtis (
      client_id integer not null references clients (id) on delete cascade,
      jti text not null,
      expires_at timestamptz not null,
      primary key (client_id, jti)
    )`.execute(db)
  await sql`create index client_assertion_jtis_expiry_idx on client_assertion_jtis (expires_at)`.execute(db)
  await sql`
    insert into client_assertion_jtis (client_id, jti, expires_at)
    select clients.id, jtis.jti, jtis.expires_at
    from assertion_jtis jtis join clients on clients.client_id = jtis.client_id`.execute(db)
  await sql`drop table assertion_jtis`.execute(db)
}
