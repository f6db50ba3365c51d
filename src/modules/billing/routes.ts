import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import {
  CreateInvoiceBody,
  InvoiceEnvelope,
  InvoiceListQuery,
  InvoicePageEnvelope,
  InvoiceWithPaymentsEnvelope,
  PaymentEnvelope,
  PaymentHeaders,
  RecordPaymentBody,
} from '../../../schemas/billing.js'
import { IdParams } from '../../../schemas/common.js'
import { ok } from '../../http/envelope.js'
import { principalOf } from '../../http/principal.js'
import { errorResponse } from '../../http/responses.js'
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
const otherOrganization = errorResponse(
  403,
  'Missing role, or the record belongs to another organization (AUTH_003)',
)
const noInvoice = errorResponse(404, 'No such invoice (RES_001)')
const stateConflict = errorResponse(409, 'The invoice is not in a state that allows this (RES_002)')

const billingRoutes: FastifyPluginAsyncTypebox<{ settings: BillingSettings }> = async (app, { settings }) => {
  app.post(
    '/invoices',
    {
      schema: {
        tags,
        operationId: 'createInvoice',
        summary: 'Create an invoice for a patient',
        description: 'Issued at once unless issue=false. Emits invoice.created.',
        body: CreateInvoiceBody,
        response: {
          201: InvoiceEnvelope,
          403: otherOrganization,
          404: errorResponse(404, 'No such patient (RES_001)'),
        },
      },
    },
    async (request, reply) => {
      const invoice = await createInvoice(app.db, principalOf(request), request.body, settings)
      request.auditedIds = [invoice.id]
      return reply.code(201).send(ok('Invoice created', invoice))
    },
  )

  app.get(
    '/invoices',
    {
      schema: {
        tags,
        operationId: 'listInvoices',
        summary: 'Invoices of your organization, newest first',
        querystring: InvoiceListQuery,
        response: { 200: InvoicePageEnvelope },
      },
    },
    async (request) =>
      ok('Invoices retrieved', await listInvoices(app.db, principalOf(request), request.query)),
  )

  app.get(
    '/invoices/:id',
    {
      schema: {
        tags,
        operationId: 'getInvoice',
        summary: 'One invoice with its payments',
        params: IdParams,
        response: { 200: InvoiceWithPaymentsEnvelope, 403: otherOrganization, 404: noInvoice },
      },
    },
    async (request) =>
      ok('Invoice retrieved', await getInvoice(app.db, principalOf(request), request.params.id)),
  )

  app.post(
    '/invoices/:id/issue',
    {
      schema: {
        tags,
        operationId: 'issueInvoice',
        summary: 'Issue a DRAFT invoice',
        params: IdParams,
        response: { 200: InvoiceEnvelope, 403: otherOrganization, 404: noInvoice, 409: stateConflict },
      },
    },
    async (request) =>
      ok('Invoice issued', await issueInvoice(app.db, principalOf(request), request.params.id)),
  )

  app.post(
    '/invoices/:id/void',
    {
      schema: {
        tags,
        operationId: 'voidInvoice',
        summary: 'Void an invoice that has no payments',
        params: IdParams,
        response: { 200: InvoiceEnvelope, 403: otherOrganization, 404: noInvoice, 409: stateConflict },
      },
    },
    async (request) =>
      ok('Invoice voided', await voidInvoice(app.db, principalOf(request), request.params.id)),
  )

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
        response: { 201: PaymentEnvelope, 403: otherOrganization, 404: noInvoice, 409: stateConflict },
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
