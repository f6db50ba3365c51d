import { createHash } from 'node:crypto'
import type { Db, Trx } from '../../../db/database.js'
import type { InvoiceRow } from '../../../db/tables/billing.js'
import type {
  CreateInvoiceBody,
  Invoice,
  InvoiceListQuery,
  InvoiceWithPayments,
  PaymentResult,
  RecordPaymentBody,
} from '../../../schemas/billing.js'
import { type Actor, missingRecord, ownerOrganization } from '../../access/organization-scope.js'
import { auditChange } from '../../audit/change-audit.js'
import { AppError, invalidField, invalidFields } from '../../errors.js'
import { sortOrder, splitListQuery } from '../../lib/paging.js'
import { type RecordList, recordList } from '../../lib/row-list.js'
import { atExpectedVersion, type ExpectedVersion } from '../../lib/versions.js'
import { transactionWithEvents } from '../../outbox/doorbell.js'
import { enqueueEvent } from '../../outbox/enqueue.js'
import { requirePatient } from '../patients/service.js'
import { toInvoice, toInvoiceCreatedData, toPayment, toPaymentReceivedData } from './mapper.js'
import { priceLines } from './money.js'
import {
  findPaymentByKey,
  INVOICE_SORT_COLUMNS,
  insertInvoice,
  invoiceRecords,
  invoiceRows,
  nextCounterValue,
  paymentRecords,
  paymentsOf,
  updateInvoice,
} from './queries.js'

export interface BillingSettings {
  currency: string
  taxRateBasisPoints: number
}

export async function createInvoice(
  db: Db,
  actor: Actor,
  body: CreateInvoiceBody,
  settings: BillingSettings,
): Promise<Invoice> {
  await requirePatient(db, actor, body.patientId)
  const priced = priceLines(body.lineItems, settings.taxRateBasisPoints)
  const issue = body.issue ?? true
  const row = await transactionWithEvents(db, async (trx) => {
    const sequence = await nextCounterValue(trx, actor.organizationId, 'invoice')
    const invoice = await insertInvoice(trx, {
      organization_id: actor.organizationId,
      number: `INV-${String(sequence).padStart(6, '0')}`,
      patient_id: body.patientId,
      encounter_id: null,
      status: issue ? 'ISSUED' : 'DRAFT',
      currency: body.currency ?? settings.currency,
      line_items: priced.lineItems,
      subtotal: priced.subtotal,
      tax_rate_basis_points: settings.taxRateBasisPoints,
      tax: priced.tax,
      total: priced.total,
      due_date: body.dueDate,
      issued_at: issue ? new Date() : null,
      voided_at: null,
      created_by: actor.userId,
    })
    await enqueueEvent(trx, actor.organizationId, 'invoice.created', toInvoiceCreatedData(invoice))
    await auditChange(trx, [invoice.id])
    return invoice
  })
  return toInvoice(row)
}

async function missingInvoice(db: Db, actor: Actor, id: number): Promise<never> {
  return missingRecord('Invoice', id, await ownerOrganization(db, 'invoices', id), actor)
}

export async function getInvoice(db: Db, actor: Actor, id: number): Promise<InvoiceWithPayments> {
  const row =
    (await invoiceRecords.find(db, actor.organizationId, id)) ?? (await missingInvoice(db, actor, id))
  const payments = await paymentsOf(db, actor.organizationId, id)
  return { ...toInvoice(row), payments: payments.map(toPayment) }
}

/** The organization's invoices a list query asks for. */
export function listInvoices(db: Db, actor: Actor, query: InvoiceListQuery): RecordList<Invoice> {
  const { paging, filters } = splitListQuery(query)
  const sort = sortOrder(paging.sort, INVOICE_SORT_COLUMNS, { field: 'createdAt', direction: 'desc' })
  return recordList(invoiceRows(db, actor.organizationId, filters), paging, sort, (rows) =>
    rows.map(toInvoice),
  )
}

const conflict = (details: string) => new AppError('RES_002', details, { message: 'Invoice state conflict' })

/** A change of the invoice's state, made holding its row: with `expectedVersion`, only at that version. */
async function changeInvoice(
  db: Db,
  actor: Actor,
  id: number,
  expectedVersion: ExpectedVersion,
  change: (invoice: InvoiceRow, trx: Trx) => Promise<InvoiceRow>,
): Promise<Invoice> {
  const row = await db.transaction().execute(async (trx) => {
    const locked = await invoiceRecords.lock(trx, actor.organizationId, id)
    const invoice = await atExpectedVersion(locked, expectedVersion, () => missingInvoice(trx, actor, id))
    const changed = await change(invoice, trx)
    await auditChange(trx, [id])
    return changed
  })
  return toInvoice(row)
}

export function issueInvoice(db: Db, actor: Actor, id: number, expectedVersion: ExpectedVersion) {
  return changeInvoice(db, actor, id, expectedVersion, (invoice, trx) => {
    if (invoice.status !== 'DRAFT')
      throw conflict(`Only a DRAFT invoice can be issued; this one is ${invoice.status}`)
    return updateInvoice(trx, actor.organizationId, id, { status: 'ISSUED', issued_at: new Date() })
  })
}

export function voidInvoice(db: Db, actor: Actor, id: number, expectedVersion: ExpectedVersion) {
  return changeInvoice(db, actor, id, expectedVersion, (invoice, trx) => {
    if (Number(invoice.amount_paid) > 0) throw conflict('An invoice with payments cannot be voided')
    if (invoice.status === 'VOID') throw conflict('The invoice is already void')
    return updateInvoice(trx, actor.organizationId, id, { status: 'VOID', voided_at: new Date() })
  })
}

const requestHash = (body: RecordPaymentBody) =>
  createHash('sha256')
    .update(
      JSON.stringify([
        body.invoiceId,
        body.amount,
        body.method,
        body.externalReference ?? null,
        body.receivedAt ?? null,
      ]),
    )
    .digest('hex')

export interface PaymentOutcome {
  payment: PaymentResult
  /** True when an Idempotency-Key repeat returned the earlier payment. */
  replayed: boolean
}

/**
 * Records a payment. The invoice row is locked for the whole transaction, so concurrent payments
 * queue: none can see a stale balance, and together they can never exceed the total. With an
 * Idempotency-Key, a repeat (same key, same request) returns the first payment.
 */
export async function recordPayment(
  db: Db,
  actor: Actor,
  body: RecordPaymentBody,
  idempotencyKey: string | undefined,
): Promise<PaymentOutcome> {
  const hash = requestHash(body)
  try {
    return await transactionWithEvents(db, async (trx) => {
      const invoice =
        (await invoiceRecords.lock(trx, actor.organizationId, body.invoiceId)) ??
        (await missingInvoice(trx, actor, body.invoiceId))
      if (idempotencyKey) {
        const earlier = await findPaymentByKey(trx, actor.organizationId, idempotencyKey)
        if (earlier) {
          if (earlier.request_hash !== hash) {
            throw invalidFields(
              [{ path: '', message: 'differs from the payment first sent with this Idempotency-Key' }],
              'This Idempotency-Key was used for a different payment',
            )
          }
          return { payment: { ...toPayment(earlier), invoice: toInvoice(invoice) }, replayed: true }
        }
      }
      if (invoice.status !== 'ISSUED' && invoice.status !== 'PARTIALLY_PAID') {
        throw conflict(`A ${invoice.status} invoice takes no payments`)
      }
      const balance = Number(invoice.total) - Number(invoice.amount_paid)
      if (body.amount > balance) throw invalidField('amount', `exceeds the open balance of ${balance}`)
      const payment = await paymentRecords.insert(trx, {
        organization_id: actor.organizationId,
        invoice_id: invoice.id,
        amount: body.amount,
        currency: invoice.currency,
        method: body.method,
        external_reference: body.externalReference ?? null,
        received_at: body.receivedAt ? new Date(body.receivedAt) : new Date(),
        idempotency_key: idempotencyKey ?? null,
        request_hash: idempotencyKey ? hash : null,
        recorded_by: actor.userId,
      })
      const paid = Number(invoice.amount_paid) + body.amount
      const updated = await updateInvoice(trx, actor.organizationId, invoice.id, {
        amount_paid: paid,
        status: paid === Number(invoice.total) ? 'PAID' : 'PARTIALLY_PAID',
      })
      await enqueueEvent(
        trx,
        actor.organizationId,
        'payment.received',
        toPaymentReceivedData(payment, updated),
      )
      await auditChange(trx, [payment.id])
      return { payment: { ...toPayment(payment), invoice: toInvoice(updated) }, replayed: false }
    })
  } catch (error) {
    // The same key used at the same moment for another invoice: the unique index decides.
    if ((error as { constraint?: string }).constraint === 'payments_idempotency_key') {
      throw new AppError('RES_002', 'This Idempotency-Key is being used by another payment')
    }
    throw error
  }
}
