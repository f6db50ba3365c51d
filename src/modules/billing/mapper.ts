import type { InvoiceRow, PaymentRow } from '../../../db/tables/billing.js'
import type { Invoice, PaymentResult } from '../../../schemas/billing.js'
import type { EventData } from '../../../schemas/events.js'

/** The API's invoice from a row; only what the response schema declares is ever sent. */
export function toInvoice(row: InvoiceRow): Invoice {
  return {
    id: row.id,
    number: row.number,
    patientId: row.patient_id,
    status: row.status as Invoice['status'],
    currency: row.currency,
    lineItems: row.line_items,
    subtotal: Number(row.subtotal),
    taxRateBasisPoints: row.tax_rate_basis_points,
    tax: Number(row.tax),
    total: Number(row.total),
    amountPaid: Number(row.amount_paid),
    balance: Number(row.total) - Number(row.amount_paid),
    dueDate: row.due_date,
    issuedAt: row.issued_at?.toISOString() ?? null,
    voidedAt: row.voided_at?.toISOString() ?? null,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
    version: row.version,
  }
}

export function toPayment(row: PaymentRow) {
  return {
    id: row.id,
    invoiceId: row.invoice_id,
    amount: Number(row.amount),
    currency: row.currency,
    method: row.method as PaymentResult['method'],
    externalReference: row.external_reference,
    receivedAt: row.received_at.toISOString(),
    recordedBy: row.recorded_by,
    createdAt: row.created_at.toISOString(),
  }
}

export function toInvoiceCreatedData(row: InvoiceRow): EventData<'invoice.created'> {
  return {
    id: row.id,
    patientId: row.patient_id,
    number: row.number,
    total: Number(row.total),
    currency: row.currency,
    status: row.status,
  }
}

/** `invoice` is the invoice as the payment left it: its balance is what remains open. */
export function toPaymentReceivedData(
  payment: PaymentRow,
  invoice: InvoiceRow,
): EventData<'payment.received'> {
  return {
    id: payment.id,
    invoiceId: payment.invoice_id,
    amount: Number(payment.amount),
    currency: payment.currency,
    balance: Number(invoice.total) - Number(invoice.amount_paid),
  }
}
