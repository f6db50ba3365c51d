import { type Kysely, sql } from 'kysely'

// Frozen: what a practice tells about itself (its type-2 NPI, phone, e-mail and address), kept on
// its organization, as US Core's Organization and Location publish them. The NPI's check digit is
// the service's to verify; the column keeps its shape.

export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    alter table organizations
      add column npi text check (npi ~ '^[0-9]{10}$'),
      add column phone_number text,
      add column email text,
      add column address_street text,
      add column address_city text,
      add column address_state text,
      add column address_postal_code text,
      add column address_country text,
      add column updated_by integer references users (id)`.execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`
    alter table organizations
      drop column npi,
      drop column phone_number,
      drop column email,
      drop column address_street,
      drop column address_city,
      drop column address_state,
      drop column address_postal_code,
      drop column address_country,
      drop column updated_by`.execute(db)
}
