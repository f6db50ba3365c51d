import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { percentOf } from '../../../src/modules/billing/money.js'
import { buildTestApp } from '../../helpers/app.js'
import {
  bearer,
  createPatient,
  newOrganization,
  type TestOrganization,
  type TestUser,
} from '../../helpers/factories.js'

let app: App
let org: TestOrganization
let biller: TestUser
let patientId: number

beforeAll(async () => {
  app = await buildTestApp({ TAX_RATE_BASIS_POINTS: '825' })
  org = await newOrganization(app)
  biller = await org.user('BILLING')
  const provider = await org.user('PROVIDER')
  patientId = await createPatient(app, provider)
})
afterAll(async () => {
  await app.close()
})

const line = (unitPrice: number, quantity = 1, code = '99213') => ({
  code,
  description: 'Visit',
  quantity,
  unitPrice,
})
const createInvoice = (payload: object, user = biller) =>
  app.inject({ method: 'POST', url: '/api/billing/invoices', headers: bearer(user.token), payload })
const pay = (payload: object, headers: Record<string, string> = {}, user = biller) =>
  app.inject({
    method: 'POST',
    url: '/api/billing/payments',
    headers: { ...bearer(user.token), ...headers },
    payload,
  })

describe('percentOf', () => {
  it.each([
    [1000, 825, 83],
    [1234, 825, 102],
    [1212, 825, 100],
    [60, 825, 5],
    [0, 825, 0],
    [999_999_999_999, 10_000, 999_999_999_999],
  ])('%i at %i basis points is %i (half up)', (amount, bp, expected) => {
    expect(percentOf(amount, bp)).toBe(expected)
  })
})

describe('POST /api/billing/invoices', () => {
  it('computes lines, subtotal, rounded tax, total and balance, numbers invoices in sequence, emits invoice.created', async () => {
    const lines = [line(12_500), line(3_333, 3, 'J3420'), line(1, 7, '0001F')]
    const response = await createInvoice({ patientId, dueDate: '2026-12-31', lineItems: lines })
    expect(response.statusCode).toBe(201)
    const invoice = response.json().data
    const subtotal = 12_500 + 3 * 3_333 + 7
    const tax = Math.floor((subtotal * 825) / 10_000 + 0.5)
    expect(invoice).toMatchObject({
      status: 'ISSUED',
      currency: 'USD',
      subtotal,
      taxRateBasisPoints: 825,
      tax,
      total: subtotal + tax,
      amountPaid: 0,
      balance: subtotal + tax,
    })
    expect(invoice.lineItems[1]).toMatchObject({ quantity: 3, unitPrice: 3_333, amount: 9_999 })
    expect(invoice.number).toMatch(/^INV-\d{6}$/)
    const next = (await createInvoice({ patientId, dueDate: '2026-12-31', lineItems: [line(100)] })).json()
      .data
    expect(Number(next.number.slice(4))).toBe(Number(invoice.number.slice(4)) + 1)
    const event = await app.db
      .selectFrom('outbox_events')
      .select('payload')
      .where('event_type', '=', 'invoice.created')
      .where('organization_id', '=', org.id)
      .orderBy('id')
      .executeTakeFirstOrThrow()
    expect(event.payload.data).toEqual({
      id: invoice.id,
      patientId,
      number: invoice.number,
      total: invoice.total,
      currency: 'USD',
      status: 'ISSUED',
    })
  })

  it.each([
    [{ lineItems: [] }, 'lineItems'],
    [{ lineItems: [line(100, 1, '9921')] }, 'code'],
    [{ lineItems: [line(-1)] }, 'unitPrice'],
    [{ lineItems: [line(10.5)] }, 'unitPrice'],
    [{ lineItems: [line(100, 0)] }, 'quantity'],
    [{ currency: 'usd', lineItems: [line(1)] }, 'currency'],
    [{ lineItems: [line(1_000_000_000_000, 2)] }, 'lineItems.0 has an amount (quantity × unitPrice) over'],
    [{ lineItems: [line(600_000_000_000), line(600_000_000_000)] }, 'The invoice total exceeds'],
  ])('answers 422 for %o', async (change, field) => {
    const response = await createInvoice({ patientId, dueDate: '2026-12-31', ...change })
    expect(response.statusCode).toBe(422)
    expect(response.json().error.details).toContain(field)
    expect(response.json().error.fields).toEqual([
      { path: expect.stringMatching(/^(lineItems|currency)/), message: expect.any(String) },
    ])
  })

  it('is for BILLING and ADMIN; PROVIDER reads; another organization gets 403', async () => {
    const provider = await org.user('PROVIDER')
    expect(
      (await createInvoice({ patientId, dueDate: '2026-12-31', lineItems: [line(1)] }, provider)).statusCode,
    ).toBe(403)
    const { id } = (await createInvoice({ patientId, dueDate: '2026-12-31', lineItems: [line(1)] })).json()
      .data
    expect(
      (await app.inject({ url: `/api/billing/invoices/${id}`, headers: bearer(provider.token) })).statusCode,
    ).toBe(200)
    const outsider = await (await newOrganization(app)).user('BILLING', 'ADMIN')
    expect(
      (await app.inject({ url: `/api/billing/invoices/${id}`, headers: bearer(outsider.token) })).statusCode,
    ).toBe(403)
    expect(
      (await createInvoice({ patientId, dueDate: '2026-12-31', lineItems: [line(1)] }, outsider)).statusCode,
    ).toBe(403)
    expect((await pay({ invoiceId: id, amount: 1, method: 'CASH' }, {}, outsider)).statusCode).toBe(403)
    const list = await app.inject({ url: '/api/billing/invoices', headers: bearer(outsider.token) })
    expect(list.json().data.totalElements).toBe(0)
  })
})

describe('invoice status transitions', () => {
  it('DRAFT → ISSUED → PARTIALLY_PAID → PAID; VOID only without payments', async () => {
    const draft = (
      await createInvoice({ patientId, dueDate: '2026-12-31', lineItems: [line(1000)], issue: false })
    ).json().data
    expect(draft.status).toBe('DRAFT')
    expect((await pay({ invoiceId: draft.id, amount: 100, method: 'CASH' })).statusCode).toBe(409)
    const issued = await app.inject({
      method: 'POST',
      url: `/api/billing/invoices/${draft.id}/issue`,
      headers: bearer(biller.token),
    })
    expect(issued.json().data.status).toBe('ISSUED')
    expect(
      (
        await app.inject({
          method: 'POST',
          url: `/api/billing/invoices/${draft.id}/issue`,
          headers: bearer(biller.token),
        })
      ).statusCode,
    ).toBe(409)
    const total = issued.json().data.total
    const partial = await pay({ invoiceId: draft.id, amount: 400, method: 'CARD', externalReference: 'ch_1' })
    expect(partial.statusCode).toBe(201)
    expect(partial.json().data.invoice).toMatchObject({
      status: 'PARTIALLY_PAID',
      amountPaid: 400,
      balance: total - 400,
    })
    expect(
      (
        await app.inject({
          method: 'POST',
          url: `/api/billing/invoices/${draft.id}/void`,
          headers: bearer(biller.token),
        })
      ).statusCode,
    ).toBe(409)
    const rest = await pay({ invoiceId: draft.id, amount: total - 400, method: 'INSURANCE' })
    expect(rest.json().data.invoice).toMatchObject({ status: 'PAID', balance: 0 })
    const over = await pay({ invoiceId: draft.id, amount: 1, method: 'CASH' })
    expect(over.statusCode).toBe(409)

    const other = (await createInvoice({ patientId, dueDate: '2026-12-31', lineItems: [line(10)] })).json()
      .data
    const voided = await app.inject({
      method: 'POST',
      url: `/api/billing/invoices/${other.id}/void`,
      headers: bearer(biller.token),
    })
    expect(voided.json().data.status).toBe('VOID')

    const detail = (
      await app.inject({ url: `/api/billing/invoices/${draft.id}`, headers: bearer(biller.token) })
    ).json().data
    expect(detail.payments.map((p: { amount: number }) => p.amount)).toEqual([400, total - 400])
  })

  it('refuses an amount above the open balance with 422', async () => {
    const invoice = (
      await createInvoice({ patientId, dueDate: '2026-12-31', lineItems: [line(1000)] })
    ).json().data
    const response = await pay({ invoiceId: invoice.id, amount: invoice.total + 1, method: 'CASH' })
    expect(response.statusCode).toBe(422)
    expect(response.json().error.details).toBe(`amount exceeds the open balance of ${invoice.total}`)
  })
})

describe('POST /api/billing/payments with Idempotency-Key', () => {
  it('returns the first payment for a repeat and pays once; a different body with the key is refused', async () => {
    const invoice = (
      await createInvoice({ patientId, dueDate: '2026-12-31', lineItems: [line(5000)] })
    ).json().data
    const body = { invoiceId: invoice.id, amount: 2000, method: 'CARD' }
    const first = await pay(body, { 'idempotency-key': `key-${invoice.id}` })
    const repeat = await pay(body, { 'idempotency-key': `key-${invoice.id}` })
    expect(first.statusCode).toBe(201)
    expect(repeat.statusCode).toBe(201)
    expect(repeat.headers['idempotent-replayed']).toBe('true')
    expect(repeat.json().data.id).toBe(first.json().data.id)
    const detail = (
      await app.inject({ url: `/api/billing/invoices/${invoice.id}`, headers: bearer(biller.token) })
    ).json().data
    expect(detail.amountPaid).toBe(2000)
    const misuse = await pay({ ...body, amount: 1000 }, { 'idempotency-key': `key-${invoice.id}` })
    expect(misuse.statusCode).toBe(422)
    const events = await app.db
      .selectFrom('outbox_events')
      .select('payload')
      .where('event_type', '=', 'payment.received')
      .where('organization_id', '=', org.id)
      .execute()
    const forInvoice = events.filter((event) => event.payload.data.invoiceId === invoice.id)
    expect(forInvoice).toHaveLength(1)
    expect(forInvoice[0]?.payload.data).toEqual({
      id: first.json().data.id,
      invoiceId: invoice.id,
      amount: 2000,
      currency: 'USD',
      balance: invoice.total - 2000,
    })
  })
})

describe('invoice arithmetic with many lines', () => {
  it('sums 100 lines exactly in minor units and rounds the tax once, half up', async () => {
    const lines = Array.from({ length: 100 }, (_, i) =>
      line(1_999 + i * 7, (i % 5) + 1, i % 2 ? 'J3420' : '99213'),
    )
    const invoice = (await createInvoice({ patientId, dueDate: '2026-12-31', lineItems: lines })).json().data
    const subtotal = lines.reduce((sum, item) => sum + item.quantity * item.unitPrice, 0)
    expect(invoice.subtotal).toBe(subtotal)
    expect(invoice.tax).toBe(percentOf(subtotal, 825))
    expect(invoice.total).toBe(subtotal + percentOf(subtotal, 825))
    expect(invoice.lineItems).toHaveLength(100)
    const last = lines[99] as (typeof lines)[number]
    expect(invoice.lineItems[99].amount).toBe(last.quantity * last.unitPrice)
  })
})

describe('another organization on every billing route', () => {
  it('gets 403 for issue and void as well', async () => {
    const draft = (
      await createInvoice({ patientId, dueDate: '2026-12-31', lineItems: [line(1)], issue: false })
    ).json().data
    const outsider = await (await newOrganization(app)).user('BILLING', 'ADMIN')
    for (const action of ['issue', 'void']) {
      const response = await app.inject({
        method: 'POST',
        url: `/api/billing/invoices/${draft.id}/${action}`,
        headers: bearer(outsider.token),
      })
      expect(response.statusCode, action).toBe(403)
    }
    const unchanged = await app.inject({
      url: `/api/billing/invoices/${draft.id}`,
      headers: bearer(biller.token),
    })
    expect(unchanged.json().data.status).toBe('DRAFT')
  })
})
