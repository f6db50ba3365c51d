import type { ColumnType, Generated, JSONColumnType, Selectable } from 'kysely'

export interface OrganizationCountersTable {
  organization_id: number
  name: string
  value: number
}

interface InvoiceLineItemRow {
  code: string
  description: string
  quantity: number
  unitPrice: number
  amount: number
}

export interface InvoicesTable {
  id: ColumnType<number, never, never>
  organization_id: number
  /** Sequential within the organization, e.g. INV-000042; unique there. */
  number: string
  patient_id: number
  encounter_id: number | null
  status: string
  currency: string
  line_items: JSONColumnType<InvoiceLineItemRow[]>
  /** Amounts in minor units of the currency. */
  subtotal: number
  tax_rate_basis_points: number
  tax: number
  total: number
  amount_paid: Generated<number>
  due_date: string
  issued_at: Date | null
  voided_at: Date | null
  created_by: number
  created_at: Generated<Date>
  updated_at: Generated<Date>
  /** Incremented by the database on every change of the row. */
  version: Generated<number>
}

export type InvoiceRow = Selectable<InvoicesTable>

export interface PaymentsTable {
  id: ColumnType<number, never, never>
  organization_id: number
  invoice_id: number
  amount: number
  currency: string
  method: string
  external_reference: string | null
  received_at: Date
  /** The client's Idempotency-Key; a repeat returns this payment instead of paying twice. */
  idempotency_key: string | null
  /** SHA-256 of the request, to tell a true repeat from a different request reusing a key. */
  request_hash: string | null
  recorded_by: number
  created_at: Generated<Date>
}

export type PaymentRow = Selectable<PaymentsTable>
