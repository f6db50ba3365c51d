import { type Kysely, sql } from 'kysely'

// Frozen: invoices and payments. Money is integer minor units (cents) with an ISO 4217 currency.

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('organization_counters')
    .addColumn('organization_id', 'integer', (c) => c.notNull().references('organizations.id'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('value', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('organization_counters_pkey', ['organization_id', 'name'])
    .execute()

  await db.schema
    .createTable('invoices')
    .addColumn('id', 'integer', (c) => c.primaryKey().generatedAlwaysAsIdentity())
    .addColumn('organization_id', 'integer', (c) => c.notNull().references('organizations.id'))
    .addColumn('number', 'text', (c) => c.notNull())
    .addColumn('patient_id', 'integer', (c) => c.notNull().references('patients.id'))
    .addColumn('encounter_id', 'integer')
    .addColumn('status', 'text', (c) =>
      c.notNull().check(sql`status in ('DRAFT', 'ISSUED', 'PARTIALLY_PAID', 'PAID', 'VOID')`),
    )
    .addColumn('currency', 'text', (c) => c.notNull())
    .addColumn('line_items', 'jsonb', (c) => c.notNull())
    .addColumn('subtotal', 'bigint', (c) => c.notNull())
    .addColumn('tax_rate_basis_points', 'integer', (c) => c.notNull())
    .addColumn('tax', 'bigint', (c) => c.notNull())
    .addColumn('total', 'bigint', (c) => c.notNull())
    .addColumn('amount_paid', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('due_date', 'date', (c) => c.notNull())
    .addColumn('issued_at', 'timestamptz')
    .addColumn('voided_at', 'timestamptz')
    .addColumn('created_by', 'integer', (c) => c.notNull().references('users.id'))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addUniqueConstraint('invoices_organization_number_key', ['organization_id', 'number'])
    .addCheckConstraint('invoices_paid_within_total', sql`amount_paid >= 0 and amount_paid <= total`)
    .execute()
  await db.schema
    .createIndex('invoices_patient_idx')
    .on('invoices')
    .columns(['organization_id', 'patient_id', 'created_at'])
    .execute()

  await db.schema
    .createTable('payments')
    .addColumn('id', 'integer', (c) => c.primaryKey().generatedAlwaysAsIdentity())
    .addColumn('organization_id', 'integer', (c) => c.notNull().references('organizations.id'))
    .addColumn('invoice_id', 'integer', (c) => c.notNull().references('invoices.id'))
    .addColumn('amount', 'bigint', (c) => c.notNull().check(sql`amount > 0`))
    .addColumn('currency', 'text', (c) => c.notNull())
    .addColumn('method', 'text', (c) =>
      c.notNull().check(sql`method in ('CARD', 'CASH', 'CHECK', 'INSURANCE', 'OTHER')`),
    )
    .addColumn('external_reference', 'text')
    .addColumn('received_at', 'timestamptz', (c) => c.notNull())
    .addColumn('idempotency_key', 'text')
    .addColumn('request_hash', 'text')
    .addColumn('recorded_by', 'integer', (c) => c.notNull().references('users.id'))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addUniqueConstraint('payments_idempotency_key', ['organization_id', 'idempotency_key'])
    .execute()
  await db.schema.createIndex('payments_invoice_idx').on('payments').column('invoice_id').execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('payments').execute()
  await db.schema.dropTable('invoices').execute()
  await db.schema.dropTable('organization_counters').execute()
}
