import { type Kysely, sql } from 'kysely'

// Frozen: a webhook delivery's lease is named as a bulk export's is (lease_owner, lease_until), so
// that both kinds of background job are claimed, renewed and released in the same words. Not
// additive: an instance of an earlier release can no longer claim, record or redeliver deliveries
// once it has run, so the instances are replaced right after it.
export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table webhook_deliveries rename column locked_until to lease_until`.execute(db)
  await sql`alter table webhook_deliveries rename column locked_by to lease_owner`.execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`alter table webhook_deliveries rename column lease_owner to locked_by`.execute(db)
  await sql`alter table webhook_deliveries rename column lease_until to locked_until`.execute(db)
}
