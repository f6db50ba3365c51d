import { sql } from 'kysely'
import type { Db, Trx } from '../../../db/database.js'
import type { InvoiceRow } from '../../../db/tables/billing.js'
import type { InvoiceListQuery } from '../../../schemas/billing.js'
import { inOrganization, organizationRecords } from '../../lib/organization-records.js'
import type { ListFilters } from '../../lib/paging.js'
import { rowList } from '../../lib/row-list.js'

export const INVOICE_SORT_COLUMNS = {
  createdAt: 'created_at',
  dueDate: 'due_date',
  number: 'number',
  total: 'total',
}

/** The next value of an organization's counter; concurrent callers get distinct values. */
export async function nextCounterValue(trx: Trx, organizationId: number, name: string) {
  const row = await trx
    .insertInto('organization_counters')
    .values({ organization_id: organizationId, name, value: 1 })
    .onConflict((conflict) =>
      conflict
        .columns(['organization_id', 'name'])
        .doUpdateSet({ value: sql`organization_counters.value + 1` }),
    )
    .returning('value')
    .executeTakeFirstOrThrow()
  return Number(row.value)
}

export const invoiceRecords = organizationRecords('invoices')

export function insertInvoice(
  trx: Trx,
  invoice: Omit<InvoiceRow, 'id' | 'amount_paid' | 'created_at' | 'updated_at' | 'version'>,
) {
  return invoiceRecords.insert(trx, { ...invoice, line_items: JSON.stringify(invoice.line_items) })
}

export function updateInvoice(
  trx: Trx,
  organizationId: number,
  id: number,
  changes: Partial<Pick<InvoiceRow, 'status' | 'amount_paid' | 'issued_at' | 'voided_at'>>,
) {
  return inOrganization(trx, organizationId)
    .updateTable('invoices')
    .set(changes)
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow()
}

/** The organization's invoices matching the filters (invoices are never removed, so sync pages have no tombstones). */
export function invoiceRows(db: Db, organizationId: number, filters: ListFilters<InvoiceListQuery>) {
  let query = inOrganization(db, organizationId).selectFrom('invoices').selectAll()
  if (filters.patientId) query = query.where('patient_id', '=', filters.patientId)
  if (filters.status) query = query.where('status', '=', filters.status)
  if (filters.from) query = query.where('created_at', '>=', new Date(`${filters.from}T00:00:00Z`))
  if (filters.to) query = query.where('created_at', '<', new Date(`${filters.to}T00:00:00Z`))
  return rowList(db, query)
}

export const paymentRecords = organizationRecords('payments')

export function paymentsOf(db: Db, organizationId: number, invoiceId: number) {
  return inOrganization(db, organizationId)
    .selectFrom('payments')
    .selectAll()
    .where('invoice_id', '=', invoiceId)
    .orderBy('id')
    .execute()
}

export function findPaymentByKey(db: Db, organizationId: number, key: string) {
  return inOrganization(db, organizationId)
    .selectFrom('payments')
    .selectAll()
    .where('idempotency_key', '=', key)
    .executeTakeFirst()
}
