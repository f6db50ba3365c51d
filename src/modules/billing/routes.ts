import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import {
  CreateInvoiceBody,
  Invoice,
  InvoiceEnvelope,
  InvoiceListQuery,
  InvoicePageEnvelope,
  InvoiceWithPaymentsEnvelope,
  PaymentEnvelope,
  PaymentHeaders,
  RecordPaymentBody,
} from '../../../schemas/billing.js'
import { ok } from '../../http/envelope.js'
import { listOrSync } from '../../http/list-or-sync.js'
import { recordRoutes } from '../../http/record-routes.js'
import { principalOf } from '../../http/request-principal.js'
import { errorResponse, noSuch, otherOrganization } from '../../http/responses.js'
import { versionRoutes } from '../../http/version-routes.js'
import { toInvoice } from './mapper.js'
import {
  type BillingSettings,
  createInvoice,
  getInvoice,
  issueInvoice,
  listInvoices,
  recordPayment,
  voidInvoice,
} from './service.js'

const tags = ['Billing']
const forbidden = otherOrganization('record', 'RecordForbidden')
const invoiceErrors = { 403: forbidden, 404: noSuch('invoice', 'InvoiceNotFound') }
const stateConflict = errorResponse(
  409,
  'The invoice is not in a state that allows this (RES_002)',
  'InvoiceStateConflict',
)

const billingRoutes: FastifyPluginAsyncTypebox<{ settings: BillingSettings }> = async (app, { settings }) => {
  const invoices = recordRoutes(app, {
    tags,
    path: '/invoices',
    envelope: InvoiceWithPaymentsEnvelope,
    errors: invoiceErrors,
  })

  invoices.create({
    operationId: 'createInvoice',
    summary: 'Create an invoice for a patient',
    description: 'Issued at once unless issue=false. Emits invoice.created.',
    body: CreateInvoiceBody,
    response: { 201: InvoiceEnvelope, 403: forbidden, 404: noSuch('patient', 'PatientNotFound') },
    message: 'Invoice created',
    create: (db, actor, body) => createInvoice(db, actor, body, settings),
  })

  app.get(
    '/invoices',
    {
      schema: {
        tags,
        operationId: 'listInvoices',
        summary: 'Invoices of your organization, newest first',
        description:
          'With `updatedSince` or `cursor`, a sync page: invoices created or changed since (issued, paid, voided), oldest change first.',
        querystring: InvoiceListQuery,
        response: { 200: InvoicePageEnvelope },
      },
    },
    async (request) => listOrSync(request, 'Invoices retrieved', listInvoices, { auditIds: false }),
  )

  invoices.get({
    operationId: 'getInvoice',
    summary: 'One invoice with its payments',
    description:
      'Carries the ETag `W/"<version>"` (a payment changes the invoice, so it raises the version); with a current `If-None-Match`, 304 without a body.',
    message: 'Invoice retrieved',
    read: getInvoice,
  })

  versionRoutes(app, {
    table: 'invoices',
    tags,
    path: '/invoices',
    name: 'Invoice',
    noun: 'invoice',
    schema: Invoice,
    errors: invoiceErrors,
    read: getInvoice,
    represent: toInvoice,
  })

  invoices.change('POST', '/issue', {
    operationId: 'issueInvoice',
    summary: 'Issue a DRAFT invoice',
    description: 'With `If-Match`, only if the invoice is still at that version (412 otherwise).',
    answer: InvoiceEnvelope,
    errors: { 409: stateConflict },
    message: 'Invoice issued',
    change: issueInvoice,
  })

  invoices.change('POST', '/void', {
    operationId: 'voidInvoice',
    summary: 'Void an invoice that has no payments',
    description: 'With `If-Match`, only if the invoice is still at that version (412 otherwise).',
    answer: InvoiceEnvelope,
    errors: { 409: stateConflict },
    message: 'Invoice voided',
    change: voidInvoice,
  })

  app.post(
    '/payments',
    {
      schema: {
        tags,
        operationId: 'recordPayment',
        summary: 'Record a payment against an invoice',
        description:
          'Changes the invoice balance and status in the same transaction. Emits payment.received.',
        headers: PaymentHeaders,
        body: RecordPaymentBody,
        response: {
          201: {
            ...PaymentEnvelope,
            headers: {
              'Idempotent-Replayed': {
                type: 'string',
                enum: ['true'],
                description:
                  'Present when this answer repeats the payment first recorded under the same Idempotency-Key',
              },
            },
          },
          ...invoiceErrors,
          409: stateConflict,
        },
      },
    },
    async (request, reply) => {
      const { payment, replayed } = await recordPayment(
        app.db,
        principalOf(request),
        request.body,
        request.headers['idempotency-key'],
      )
      request.auditedIds = [payment.id]
      if (replayed) reply.header('idempotent-replayed', 'true')
      return reply.code(201).send(ok(replayed ? 'Payment already recorded' : 'Payment recorded', payment))
    },
  )
}

export default billingRoutes
