import { type Kysely, sql } from 'kysely'

// Frozen: secure messages between users of one organization.

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('messages')
    .addColumn('id', 'integer', (c) => c.primaryKey().generatedAlwaysAsIdentity())
    .addColumn('organization_id', 'integer', (c) => c.notNull().references('organizations.id'))
    .addColumn('sender_id', 'integer', (c) => c.notNull().references('users.id'))
    .addColumn('recipient_id', 'integer', (c) => c.notNull().references('users.id'))
    .addColumn('patient_id', 'integer', (c) => c.references('patients.id'))
    .addColumn('thread_id', 'integer', (c) => c.references('messages.id'))
    .addColumn('reply_to_id', 'integer', (c) => c.references('messages.id'))
    .addColumn('subject', 'text', (c) => c.notNull())
    .addColumn('body', 'text', (c) => c.notNull())
    .addColumn('read_at', 'timestamptz')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute()
  await db.schema
    .createIndex('messages_inbox_idx')
    .on('messages')
    .columns(['organization_id', 'recipient_id', 'created_at'])
    .execute()
  await db.schema
    .createIndex('messages_sent_idx')
    .on('messages')
    .columns(['organization_id', 'sender_id', 'created_at'])
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('messages').execute()
}
