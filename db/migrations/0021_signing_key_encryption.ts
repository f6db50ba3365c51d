import { type Kysely, sql } from 'kysely'

// Frozen: the token-signing private key is kept sealed with ENCRYPTION_KEY (private_key_sealed)
// instead of in clear, so that a copy of the database alone cannot mint tokens. A migration does
// not know the key: the service seals any key still in clear when it next starts (and a key written
// in clear by an older instance during the upgrade at its next refresh), then clears private_key.
// Each row holds its key in exactly one of the two columns.

export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    alter table signing_keys
      alter column private_key drop not null,
      add column private_key_sealed text,
      add constraint signing_keys_private_key_once
        check ((private_key is null) <> (private_key_sealed is null))`.execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  const sealed = await sql<{ count: string }>`
    select count(*) as count from signing_keys where private_key_sealed is not null`.execute(db)
  if (Number(sealed.rows[0]?.count ?? 0) > 0) {
    // Without the encryption key the sealed keys cannot be put back in clear; dropping them would
    // sign every user out and break every token until a new key is made.
    throw new Error(
      'signing_keys holds sealed private keys: delete them (tokens they signed stop verifying) before undoing 0021',
    )
  }
  await sql`
    alter table signing_keys
      drop constraint signing_keys_private_key_once,
      drop column private_key_sealed,
      alter column private_key set not null`.execute(db)
}
