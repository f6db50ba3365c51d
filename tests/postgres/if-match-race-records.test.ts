import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../src/app.js'
import { buildTestApp } from '../helpers/app.js'
import { bearer, createPatient, newOrganization } from '../helpers/factories.js'
import { registerWebhook } from '../helpers/webhooks.js'

let app: App

beforeAll(async () => {
  app = await buildTestApp({}, undefined, {
    // Registration resolves the name only; nothing is delivered in this file.
    resolveHost: async () => ['93.184.216.34'],
  })
})
afterAll(async () => {
  await app.close()
})

type Attempt = { method: 'PUT' | 'PATCH' | 'POST' | 'DELETE'; url: string; payload?: object }

/** 20 writes at once, all carrying If-Match W/"1": exactly one may win, the others see 412. */
async function race(token: string, attemptOf: (i: number) => Attempt) {
  const responses = await Promise.all(
    Array.from({ length: 20 }, (_, i) =>
      app.inject({ ...attemptOf(i), headers: { ...bearer(token), 'if-match': 'W/"1"' } }),
    ),
  )
  const statuses = responses.map((response) => response.statusCode)
  expect(statuses.filter((status) => status >= 200 && status < 300)).toHaveLength(1)
  expect(statuses.filter((status) => status === 412)).toHaveLength(19)
  for (const response of responses.filter((r) => r.statusCode === 412)) {
    expect(response.json().error.code).toBe('RES_003')
  }
}

const condition = { icd10Code: 'E11.9', description: 'Type 2 diabetes mellitus' }

describe('conditional writes of records on PostgreSQL', () => {
  it('lets exactly one of 20 concurrent corrections and patches of a clinical record succeed', async () => {
    const org = await newOrganization(app)
    const provider = await org.user('PROVIDER')
    const patientId = await createPatient(app, provider)
    const created = await app.inject({
      method: 'POST',
      url: `/api/patients/${patientId}/conditions`,
      headers: bearer(provider.token),
      payload: condition,
    })
    const url = `/api/patients/${patientId}/conditions/${created.json().data.id}`
    await race(provider.token, (i) =>
      i % 2 === 0
        ? { method: 'PUT', url, payload: { ...condition, note: `correction ${i}` } }
        : { method: 'PATCH', url, payload: { note: `patch ${i}` } },
    )
    const current = await app.inject({ url, headers: bearer(provider.token) })
    expect(current.json().data.version).toBe(2)
  })

  it('lets exactly one of 20 concurrent withdrawals of a clinical record succeed', async () => {
    const org = await newOrganization(app)
    const provider = await org.user('PROVIDER')
    const patientId = await createPatient(app, provider)
    const created = await app.inject({
      method: 'POST',
      url: `/api/patients/${patientId}/conditions`,
      headers: bearer(provider.token),
      payload: condition,
    })
    const url = `/api/patients/${patientId}/conditions/${created.json().data.id}`
    await race(provider.token, (i) => ({
      method: 'POST',
      url: `${url}/entered-in-error`,
      payload: { reason: `attempt ${i}` },
    }))
  })

  it('lets exactly one of 20 concurrent issues and voids of an invoice succeed', async () => {
    const org = await newOrganization(app)
    const biller = await org.user('BILLING')
    const patientId = await createPatient(app, await org.user('PROVIDER'))
    const created = await app.inject({
      method: 'POST',
      url: '/api/billing/invoices',
      headers: bearer(biller.token),
      payload: {
        patientId,
        dueDate: '2026-12-31',
        issue: false,
        lineItems: [{ code: '99213', description: 'Visit', quantity: 1, unitPrice: 10_000 }],
      },
    })
    const id = created.json().data.id as number
    await race(biller.token, (i) => ({
      method: 'POST',
      url: `/api/billing/invoices/${id}/${i % 2 === 0 ? 'issue' : 'void'}`,
    }))
    const current = await app.inject({ url: `/api/billing/invoices/${id}`, headers: bearer(biller.token) })
    expect(current.json().data.version).toBe(2)
  })

  it('lets exactly one of 20 concurrent reads of a message change it', async () => {
    const org = await newOrganization(app)
    const sender = await org.user('PROVIDER')
    const recipient = await org.user('NURSE')
    const sent = await app.inject({
      method: 'POST',
      url: '/api/messages',
      headers: bearer(sender.token),
      payload: { recipientId: recipient.id, subject: 'Glucose', body: 'Please recheck.' },
    })
    const id = sent.json().data.id as number
    await race(recipient.token, () => ({ method: 'PUT', url: `/api/messages/${id}/read` }))
  })

  it('lets exactly one of 20 concurrent updates, patches and rotations of a webhook succeed', async () => {
    const org = await newOrganization(app)
    const admin = await org.user('ADMIN')
    const { id } = await registerWebhook(app, admin, { url: 'https://hooks.example.test/ehr' })
    const url = `/api/webhooks/${id}`
    const kinds: Attempt[] = [
      { method: 'PUT', url, payload: { url: 'https://hooks.example.test/other', events: ['*'] } },
      { method: 'PATCH', url, payload: { active: false } },
      { method: 'POST', url: `${url}/rotate-secret`, payload: {} },
    ]
    await race(admin.token, (i) => kinds[i % kinds.length] as Attempt)
    const current = await app.inject({ url, headers: bearer(admin.token) })
    expect(current.json().data.version).toBe(2)
  })

  it('deletes a webhook once among 20 concurrent deletions; the others find it gone', async () => {
    const org = await newOrganization(app)
    const admin = await org.user('ADMIN')
    const { id } = await registerWebhook(app, admin, { url: 'https://hooks.example.test/ehr' })
    const responses = await Promise.all(
      Array.from({ length: 20 }, () =>
        app.inject({
          method: 'DELETE',
          url: `/api/webhooks/${id}`,
          headers: { ...bearer(admin.token), 'if-match': 'W/"1"' },
        }),
      ),
    )
    const statuses = responses.map((response) => response.statusCode)
    expect(statuses.filter((status) => status === 200)).toHaveLength(1)
    expect(statuses.filter((status) => status === 404)).toHaveLength(19)
    const tombstones = await app.db
      .selectFrom('deleted_records')
      .select('record_id')
      .where('resource_type', '=', 'webhook')
      .where('record_id', '=', id)
      .execute()
    expect(tombstones).toHaveLength(1)
  })
})
