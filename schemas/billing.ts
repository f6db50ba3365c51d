import { type Static, Type } from '@sinclair/typebox'
import {
  DateString,
  Envelope,
  Id,
  ListQuery,
  Named,
  Nullable,
  Page,
  StringEnum,
  Text,
  Timestamp,
  Version,
} from './common.js'

const INVOICE_STATUSES = ['DRAFT', 'ISSUED', 'PARTIALLY_PAID', 'PAID', 'VOID'] as const
const PAYMENT_METHODS = ['CARD', 'CASH', 'CHECK', 'INSURANCE', 'OTHER'] as const

const InvoiceStatus = StringEnum(INVOICE_STATUSES, {
  description:
    'DRAFT → ISSUED → PARTIALLY_PAID → PAID, set by issuing and by payments; DRAFT or ISSUED → VOID, only without payments',
})
/** The largest amount, in minor units, of a price, a line, a total or a payment (ten billion in a major unit). */
export const MAX_MONEY = 1_000_000_000_000
const Money = (description: string) =>
  Type.Integer({
    minimum: 0,
    maximum: MAX_MONEY,
    description: `${description}, in minor units (cents)`,
  })
const Currency = Type.String({ pattern: '^[A-Z]{3}$', description: 'ISO 4217 code', examples: ['USD'] })

const LineItemInput = Named(
  'LineItemInput',
  Type.Object(
    {
      code: Type.String({
        pattern: '^([0-9]{4}[0-9FT]|[A-V][0-9]{4})$',
        description: 'CPT (e.g. 99213, 0001F, 0042T) or HCPCS Level II (e.g. J3420) code',
      }),
      description: Text(200),
      quantity: Type.Integer({ minimum: 1, maximum: 1000 }),
      unitPrice: Money('Price of one unit'),
    },
    { additionalProperties: false },
  ),
)

export const CreateInvoiceBody = Named(
  'InvoiceCreate',
  Type.Object(
    {
      patientId: Type.Integer({ minimum: 1 }),
      currency: Type.Optional(Currency),
      dueDate: DateString,
      lineItems: Type.Array(LineItemInput, { minItems: 1, maxItems: 100 }),
      issue: Type.Optional(Type.Boolean({ default: true, description: 'false keeps it a DRAFT' })),
    },
    {
      additionalProperties: false,
      description:
        'Totals are computed by the server: each line is quantity × unitPrice; tax is TAX_RATE_BASIS_POINTS of the subtotal, rounded half up to a minor unit.',
      examples: [
        {
          patientId: 42,
          dueDate: '2026-12-31',
          lineItems: [
            {
              code: '99213',
              description: 'Office visit, established patient',
              quantity: 1,
              unitPrice: 12500,
            },
          ],
        },
      ],
    },
  ),
)
export type CreateInvoiceBody = Static<typeof CreateInvoiceBody>

const Payment = Named(
  'Payment',
  Type.Object({
    id: Id,
    invoiceId: Id,
    amount: Money('Amount paid'),
    currency: Currency,
    method: StringEnum(PAYMENT_METHODS),
    externalReference: Nullable(Type.String()),
    receivedAt: Timestamp,
    recordedBy: Id,
    createdAt: Timestamp,
  }),
)

export const Invoice = Named(
  'Invoice',
  Type.Object({
    id: Id,
    number: Type.String({ description: 'Unique within the organization, sequential: INV-000042' }),
    patientId: Id,
    status: InvoiceStatus,
    currency: Currency,
    lineItems: Type.Array(
      Type.Object({
        code: Type.String(),
        description: Type.String(),
        quantity: Type.Integer(),
        unitPrice: Type.Integer(),
        amount: Money('quantity × unitPrice'),
      }),
    ),
    subtotal: Money('Sum of the lines'),
    taxRateBasisPoints: Type.Integer({ description: '825 = 8.25 %' }),
    tax: Money('Tax'),
    total: Money('subtotal + tax'),
    amountPaid: Money('Sum of the payments'),
    balance: Money('total − amountPaid'),
    dueDate: DateString,
    issuedAt: Nullable(Timestamp),
    voidedAt: Nullable(Timestamp),
    createdAt: Timestamp,
    updatedAt: Timestamp,
    version: Version,
  }),
)
export type Invoice = Static<typeof Invoice>

export const InvoiceWithPayments = Named(
  'InvoiceWithPayments',
  Type.Composite([Invoice, Type.Object({ payments: Type.Array(Payment) })]),
)
export type InvoiceWithPayments = Static<typeof InvoiceWithPayments>

export const InvoiceEnvelope = Envelope(Invoice)
export const InvoiceWithPaymentsEnvelope = Envelope(InvoiceWithPayments)
export const InvoicePageEnvelope = Envelope(Page(Invoice))

export const InvoiceListQuery = ListQuery(['createdAt', 'dueDate', 'number', 'total'], {
  patientId: Type.Optional(Type.Integer({ minimum: 1 })),
  status: Type.Optional(InvoiceStatus),
  from: Type.Optional(Type.String({ format: 'date', description: 'Created on or after' })),
  to: Type.Optional(Type.String({ format: 'date', description: 'Created before' })),
})
export type InvoiceListQuery = Static<typeof InvoiceListQuery>

export const RecordPaymentBody = Named(
  'PaymentCreate',
  Type.Object(
    {
      invoiceId: Type.Integer({ minimum: 1 }),
      amount: Type.Integer({
        minimum: 1,
        maximum: 1_000_000_000_000,
        description: 'Minor units; at most the open balance',
      }),
      method: StringEnum(PAYMENT_METHODS),
      externalReference: Type.Optional(Text(100)),
      receivedAt: Type.Optional(Type.String({ format: 'date-time', description: 'Default now' })),
    },
    {
      additionalProperties: false,
      description:
        'Send an Idempotency-Key header to make retries safe: a repeat with the same key and body returns the first payment (Idempotent-Replayed: true) instead of paying twice.',
      examples: [{ invoiceId: 7, amount: 5000, method: 'CARD', externalReference: 'ch_3PZ' }],
    },
  ),
)
export type RecordPaymentBody = Static<typeof RecordPaymentBody>

export const PaymentResult = Named(
  'PaymentResult',
  Type.Composite([Payment, Type.Object({ invoice: Invoice })]),
)
export type PaymentResult = Static<typeof PaymentResult>
export const PaymentEnvelope = Envelope(PaymentResult)

export const PaymentHeaders = Type.Object({
  'idempotency-key': Type.Optional(
    Type.String({ pattern: '^[\\x21-\\x7e]{1,255}$', description: 'Any unique string per payment attempt' }),
  ),
})
