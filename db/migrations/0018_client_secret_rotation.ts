import type { Kysely } from 'kysely'

// Frozen: a rotated client secret keeps working beside the new one for an overlap, so an
// integration can switch without a failed token request.

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('clients')
    .addColumn('previous_secret_hash', 'text')
    .addColumn('previous_secret_expires_at', 'timestamptz')
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('clients')
    .dropColumn('previous_secret_expires_at')
    .dropColumn('previous_secret_hash')
    .execute()
}
