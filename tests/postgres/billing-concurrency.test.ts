import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../src/app.js'
import { buildTestApp } from '../helpers/app.js'
import { bearer, createPatient, newOrganization, type TestUser } from '../helpers/factories.js'

let app: App
let biller: TestUser
let patientId: number

beforeAll(async () => {
  app = await buildTestApp()
  const org = await newOrganization(app)
  biller = await org.user('BILLING')
  const provider = await org.user('PROVIDER')
  patientId = await createPatient(app, provider)
})
afterAll(async () => {
  await app.close()
})

const invoice = async (unitPrice: number) =>
  (
    await app.inject({
      method: 'POST',
      url: '/api/billing/invoices',
      headers: bearer(biller.token),
      payload: {
        patientId,
        dueDate: '2026-12-31',
        lineItems: [{ code: '99213', description: 'Visit', quantity: 1, unitPrice }],
      },
    })
  ).json().data

describe('concurrent billing on PostgreSQL', () => {
  it('never overpays: of 20 simultaneous payments of a tenth each, exactly 10 succeed', async () => {
    const { id, total } = await invoice(10_000)
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        app.inject({
          method: 'POST',
          url: '/api/billing/payments',
          headers: { ...bearer(biller.token), 'idempotency-key': `race-${id}-${i}` },
          payload: { invoiceId: id, amount: total / 10, method: 'CARD' },
        }),
      ),
    )
    const statuses = results.map((response) => response.statusCode)
    expect(statuses.filter((status) => status === 201)).toHaveLength(10)
    expect(
      statuses.filter((status) => status !== 201).every((status) => status === 409 || status === 422),
    ).toBe(true)
    const detail = (
      await app.inject({ url: `/api/billing/invoices/${id}`, headers: bearer(biller.token) })
    ).json().data
    expect(detail).toMatchObject({ amountPaid: total, balance: 0, status: 'PAID' })
    expect(detail.payments).toHaveLength(10)
  })

  it('pays once for 10 simultaneous repeats of one Idempotency-Key', async () => {
    const { id } = await invoice(5_000)
    const results = await Promise.all(
      Array.from({ length: 10 }, () =>
        app.inject({
          method: 'POST',
          url: '/api/billing/payments',
          headers: { ...bearer(biller.token), 'idempotency-key': `same-${id}` },
          payload: { invoiceId: id, amount: 1_000, method: 'CARD' },
        }),
      ),
    )
    expect(results.every((response) => response.statusCode === 201)).toBe(true)
    expect(new Set(results.map((response) => response.json().data.id)).size).toBe(1)
    const detail = (
      await app.inject({ url: `/api/billing/invoices/${id}`, headers: bearer(biller.token) })
    ).json().data
    expect(detail.amountPaid).toBe(1_000)
  })

  it('numbers 20 simultaneous invoices uniquely', async () => {
    const created = await Promise.all(Array.from({ length: 20 }, () => invoice(100)))
    expect(new Set(created.map((entry) => entry.number)).size).toBe(20)
  })
})
