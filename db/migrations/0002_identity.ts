import { type Kysely, sql } from 'kysely'

// Frozen: the identity lifecycle (refresh rotation, password resets, service accounts).

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('sessions').dropColumn('refresh_token_hash').execute()
  await db.schema
    .alterTable('sessions')
    .addColumn('client_id', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('revoked_reason', 'text')
    .execute()

  await db.schema
    .createTable('refresh_tokens')
    .addColumn('id', 'bigint', (c) => c.primaryKey().generatedAlwaysAsIdentity())
    .addColumn('session_id', 'text', (c) => c.notNull().references('sessions.id').onDelete('cascade'))
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .addColumn('rotated_at', 'timestamptz')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute()
  await db.schema
    .createIndex('refresh_tokens_session_idx')
    .on('refresh_tokens')
    .column('session_id')
    .execute()

  await db.schema
    .alterTable('users')
    .addColumn('password_change_required', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('kind', 'text', (c) =>
      c.notNull().defaultTo('PERSON').check(sql`kind in ('PERSON', 'SERVICE')`),
    )
    .execute()

  await db.schema
    .createTable('password_reset_tokens')
    .addColumn('id', 'bigint', (c) => c.primaryKey().generatedAlwaysAsIdentity())
    .addColumn('user_id', 'integer', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .addColumn('used_at', 'timestamptz')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute()
  await db.schema
    .createIndex('password_reset_tokens_user_idx')
    .on('password_reset_tokens')
    .column('user_id')
    .execute()

  await db.schema
    .createTable('clients')
    .addColumn('id', 'integer', (c) => c.primaryKey().generatedAlwaysAsIdentity())
    .addColumn('client_id', 'text', (c) => c.notNull().unique())
    .addColumn('secret_hash', 'text', (c) => c.notNull())
    .addColumn('user_id', 'integer', (c) => c.notNull().unique().references('users.id').onDelete('cascade'))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('clients').execute()
  await db.schema.dropTable('password_reset_tokens').execute()
  await db.schema.alterTable('users').dropColumn('kind').dropColumn('password_change_required').execute()
  await db.schema.dropTable('refresh_tokens').execute()
  await db.schema.alterTable('sessions').dropColumn('revoked_reason').dropColumn('client_id').execute()
  await db.schema
    .alterTable('sessions')
    .addColumn('refresh_token_hash', 'text', (c) => c.notNull().defaultTo(''))
    .execute()
}
