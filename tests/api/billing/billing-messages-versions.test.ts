import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { buildTestApp } from '../../helpers/app.js'
import { bearer, createPatient, newOrganization, type TestUser } from '../../helpers/factories.js'

let app: App

beforeAll(async () => {
  app = await buildTestApp()
})
afterAll(async () => {
  await app.close()
})

type Headers = Record<string, string>

async function billingOffice(target = app) {
  const org = await newOrganization(target)
  const biller = await org.user('BILLING')
  const patientId = await createPatient(target, await org.user('PROVIDER'))
  return { org, biller, patientId }
}

const invoiceBody = (patientId: number, issue = false) => ({
  patientId,
  dueDate: '2026-12-31',
  issue,
  lineItems: [{ code: '99213', description: 'Visit', quantity: 1, unitPrice: 10_000 }],
})

async function newInvoice(biller: TestUser, patientId: number, issue = false, target = app) {
  const response = await target.inject({
    method: 'POST',
    url: '/api/billing/invoices',
    headers: bearer(biller.token),
    payload: invoiceBody(patientId, issue),
  })
  expect(response.statusCode).toBe(201)
  return response
}

const invoiceAction = (user: TestUser, id: number, action: 'issue' | 'void', headers: Headers = {}) =>
  app.inject({
    method: 'POST',
    url: `/api/billing/invoices/${id}/${action}`,
    headers: { ...bearer(user.token), ...headers },
  })
const getInvoice = (user: TestUser, id: number, headers: Headers = {}) =>
  app.inject({ url: `/api/billing/invoices/${id}`, headers: { ...bearer(user.token), ...headers } })
const pay = (user: TestUser, invoiceId: number, amount: number) =>
  app.inject({
    method: 'POST',
    url: '/api/billing/payments',
    headers: bearer(user.token),
    payload: { invoiceId, amount, method: 'CARD' },
  })

describe('versions and ETags of invoices', () => {
  it('starts at 1 and adds one on issue, on each payment and on void, with the ETag', async () => {
    const { biller, patientId } = await billingOffice()
    const created = await newInvoice(biller, patientId)
    expect(created.headers.etag).toBe('W/"1"')
    const id = created.json().data.id as number
    expect(created.json().data.version).toBe(1)

    const issued = await invoiceAction(biller, id, 'issue')
    expect(issued.statusCode).toBe(200)
    expect(issued.json().data.version).toBe(2)
    expect(issued.headers.etag).toBe('W/"2"')

    const paid = await pay(biller, id, 1_000)
    expect(paid.statusCode).toBe(201)
    expect(paid.json().data.invoice.version).toBe(3)
    const read = await getInvoice(biller, id)
    expect(read.headers.etag).toBe('W/"3"')
    expect(read.json().data.version).toBe(3)
  })

  it('answers 304 without a body for a current If-None-Match, 200 once a payment changed the invoice', async () => {
    const { biller, patientId } = await billingOffice()
    const id = (await newInvoice(biller, patientId, true)).json().data.id as number
    const notModified = await getInvoice(biller, id, { 'if-none-match': 'W/"1"' })
    expect(notModified.statusCode).toBe(304)
    expect(notModified.body).toBe('')
    expect(notModified.headers.etag).toBe('W/"1"')
    await pay(biller, id, 500)
    const stale = await getInvoice(biller, id, { 'if-none-match': 'W/"1"' })
    expect(stale.statusCode).toBe(200)
    expect(stale.json().data.payments).toHaveLength(1)
  })

  it('returns 412 RES_003 for a stale If-Match on issue and void, and changes nothing', async () => {
    const { biller, patientId } = await billingOffice()
    const id = (await newInvoice(biller, patientId)).json().data.id as number
    const staleIssue = await invoiceAction(biller, id, 'issue', { 'if-match': 'W/"5"' })
    expect(staleIssue.statusCode).toBe(412)
    expect(staleIssue.json().error.code).toBe('RES_003')
    expect(staleIssue.json().error.details).toContain('current version is 1')
    expect((await getInvoice(biller, id)).json().data.status).toBe('DRAFT')

    expect((await invoiceAction(biller, id, 'issue', { 'if-match': 'W/"1"' })).statusCode).toBe(200)
    const staleVoid = await invoiceAction(biller, id, 'void', { 'if-match': 'W/"1"' })
    expect(staleVoid.statusCode).toBe(412)
    expect(staleVoid.json().error.details).toContain('current version is 2')
    expect((await getInvoice(biller, id)).json().data).toMatchObject({ status: 'ISSUED', version: 2 })
    const voided = await invoiceAction(biller, id, 'void', { 'if-match': '"2"' })
    expect(voided.statusCode).toBe(200)
    expect(voided.json().data).toMatchObject({ status: 'VOID', version: 3 })
  })

  it('answers 403 for another organization’s invoice and 404 for none, If-Match or not', async () => {
    const mine = await billingOffice()
    const theirs = await billingOffice()
    const id = (await newInvoice(theirs.biller, theirs.patientId)).json().data.id as number
    expect((await invoiceAction(mine.biller, id, 'issue', { 'if-match': 'W/"1"' })).statusCode).toBe(403)
    expect(
      (await invoiceAction(mine.biller, 2_000_000_000, 'void', { 'if-match': 'W/"1"' })).statusCode,
    ).toBe(404)
  })
})

async function office() {
  const org = await newOrganization(app)
  return { sender: await org.user('PROVIDER'), recipient: await org.user('NURSE') }
}

async function newMessage(sender: TestUser, recipient: TestUser, subject = 'Glucose') {
  const response = await app.inject({
    method: 'POST',
    url: '/api/messages',
    headers: bearer(sender.token),
    payload: { recipientId: recipient.id, subject, body: 'Please recheck.' },
  })
  expect(response.statusCode).toBe(201)
  return response
}

const markRead = (user: TestUser, id: number, headers: Headers = {}) =>
  app.inject({
    method: 'PUT',
    url: `/api/messages/${id}/read`,
    headers: { ...bearer(user.token), ...headers },
  })
const getMessage = (user: TestUser, id: number, headers: Headers = {}) =>
  app.inject({ url: `/api/messages/${id}`, headers: { ...bearer(user.token), ...headers } })

describe('versions and ETags of messages', () => {
  it('starts at 1; being read adds one, and reading again changes nothing', async () => {
    const { sender, recipient } = await office()
    const sent = await newMessage(sender, recipient)
    expect(sent.headers.etag).toBe('W/"1"')
    const id = sent.json().data.id as number
    expect(sent.json().data).toMatchObject({ version: 1, updatedAt: sent.json().data.createdAt })

    const read = await markRead(recipient, id)
    expect(read.statusCode).toBe(200)
    expect(read.headers.etag).toBe('W/"2"')
    expect(read.json().data.version).toBe(2)
    const again = await markRead(recipient, id)
    expect(again.json().data).toEqual(read.json().data)
    expect((await getMessage(sender, id)).headers.etag).toBe('W/"2"')
  })

  it('answers 304 without a body for a current If-None-Match, 200 once the message was read', async () => {
    const { sender, recipient } = await office()
    const id = (await newMessage(sender, recipient)).json().data.id as number
    const notModified = await getMessage(sender, id, { 'if-none-match': 'W/"1"' })
    expect(notModified.statusCode).toBe(304)
    expect(notModified.body).toBe('')
    await markRead(recipient, id)
    const stale = await getMessage(sender, id, { 'if-none-match': 'W/"1"' })
    expect(stale.statusCode).toBe(200)
    expect(stale.json().data.readAt).not.toBeNull()
  })

  it('returns 412 RES_003 for a stale If-Match on read and leaves the message unread', async () => {
    const { sender, recipient } = await office()
    const id = (await newMessage(sender, recipient)).json().data.id as number
    const stale = await markRead(recipient, id, { 'if-match': 'W/"2"' })
    expect(stale.statusCode).toBe(412)
    expect(stale.json().error.code).toBe('RES_003')
    expect(stale.json().error.details).toContain('current version is 1')
    expect((await getMessage(recipient, id)).json().data).toMatchObject({ readAt: null, version: 1 })
    expect((await markRead(recipient, id, { 'if-match': 'W/"1"' })).statusCode).toBe(200)
    // The sender is still refused (403), a stranger still finds nothing (404).
    expect((await markRead(sender, id, { 'if-match': 'W/"2"' })).statusCode).toBe(403)
    const stranger = (await office()).recipient
    expect((await markRead(stranger, id, { 'if-match': 'W/"2"' })).statusCode).toBe(404)
  })
})

describe('REQUIRE_IF_MATCH=true on invoices and messages', () => {
  it('returns 428 for issue, void and read without If-Match, and accepts them with it', async () => {
    const strict = await buildTestApp({ REQUIRE_IF_MATCH: 'true' })
    try {
      const { org, biller, patientId } = await billingOffice(strict)
      const id = (await newInvoice(biller, patientId, false, strict)).json().data.id as number
      for (const action of ['issue', 'void']) {
        const response = await strict.inject({
          method: 'POST',
          url: `/api/billing/invoices/${id}/${action}`,
          headers: bearer(biller.token),
        })
        expect(response.statusCode, action).toBe(428)
        expect(response.json().error.code).toBe('RES_003')
      }
      const issued = await strict.inject({
        method: 'POST',
        url: `/api/billing/invoices/${id}/issue`,
        headers: { ...bearer(biller.token), 'if-match': 'W/"1"' },
      })
      expect(issued.statusCode).toBe(200)

      const recipient = await org.user('NURSE')
      const sent = await strict.inject({
        method: 'POST',
        url: '/api/messages',
        headers: bearer(biller.token),
        payload: { recipientId: recipient.id, subject: 'Bill', body: 'Sent.' },
      })
      const messageId = sent.json().data.id as number
      const without = await strict.inject({
        method: 'PUT',
        url: `/api/messages/${messageId}/read`,
        headers: bearer(recipient.token),
      })
      expect(without.statusCode).toBe(428)
      const withHeader = await strict.inject({
        method: 'PUT',
        url: `/api/messages/${messageId}/read`,
        headers: { ...bearer(recipient.token), 'if-match': 'W/"1"' },
      })
      expect(withHeader.statusCode).toBe(200)
    } finally {
      await strict.close()
    }
  })
})

interface SyncItem {
  id: number
  version: number
  updatedAt: string
}

async function walk(
  user: TestUser,
  base: string,
  start: string,
  size: number,
  between?: (page: number) => Promise<void>,
) {
  const seen: SyncItem[] = []
  const join = base.includes('?') ? '&' : '?'
  let url = `${base}${join}updatedSince=${encodeURIComponent(start)}&size=${size}`
  for (let page = 0; page < 100; page++) {
    const response = await app.inject({ url, headers: bearer(user.token) })
    expect(response.statusCode, url).toBe(200)
    const data = response.json().data
    expect(data.totalElements).toBeUndefined()
    expect(typeof data.nextCursor).toBe('string')
    seen.push(...data.content)
    if (data.last) return { seen, cursor: data.nextCursor as string }
    await between?.(page)
    url = `${base}${join}cursor=${data.nextCursor}&size=${size}`
  }
  throw new Error('the walk did not end')
}

const inOrder = (items: SyncItem[]) => {
  const positions = items.map((item) => `${item.updatedAt}|${String(item.id).padStart(10, '0')}`)
  expect([...positions].sort()).toEqual(positions)
}

describe('GET /api/billing/invoices with updatedSince and cursor', () => {
  it('returns each invoice once in (updatedAt, id) order; one changed during the walk comes again', async () => {
    const { biller, patientId } = await billingOffice()
    const start = new Date(Date.now() - 60_000).toISOString()
    const ids: number[] = []
    for (let i = 0; i < 7; i++) ids.push((await newInvoice(biller, patientId)).json().data.id)
    const changed = ids[0] as number
    const { seen } = await walk(biller, '/api/billing/invoices', start, 2, async (page) => {
      if (page === 1) await invoiceAction(biller, changed, 'issue')
    })
    for (const id of ids.slice(1)) expect(seen.filter((item) => item.id === id)).toHaveLength(1)
    expect(seen.filter((item) => item.id === changed).map((item) => item.version)).toEqual([1, 2])
    inOrder(seen)
  })

  it('applies the filters, resumes from the last cursor, and never shows another organization’s invoices', async () => {
    const { biller, patientId } = await billingOffice()
    const other = await billingOffice()
    const start = new Date(Date.now() - 60_000).toISOString()
    const draft = (await newInvoice(biller, patientId)).json().data.id
    const issued = (await newInvoice(biller, patientId, true)).json().data.id
    await newInvoice(other.biller, other.patientId)
    const { seen, cursor } = await walk(biller, '/api/billing/invoices?status=DRAFT', start, 10)
    expect(seen.map((item) => item.id)).toEqual([draft])
    const all = await walk(biller, '/api/billing/invoices', start, 10)
    expect(all.seen.map((item) => item.id)).toEqual([draft, issued])
    await newInvoice(biller, patientId)
    const resumed = await app.inject({
      url: `/api/billing/invoices?status=DRAFT&cursor=${cursor}`,
      headers: bearer(biller.token),
    })
    expect(resumed.statusCode).toBe(200)
    expect(resumed.json().data.content).toHaveLength(1)
  })

  it('returns 400 for a tampered cursor and for a cursor sent with other filters', async () => {
    const { biller, patientId } = await billingOffice()
    await newInvoice(biller, patientId)
    await newInvoice(biller, patientId)
    const first = await app.inject({
      url: '/api/billing/invoices?updatedSince=2000-01-01T00:00:00Z&size=1',
      headers: bearer(biller.token),
    })
    const cursor = first.json().data.nextCursor as string
    const [body, signature] = cursor.split('.') as [string, string]
    const forged = `${Buffer.from(
      Buffer.from(body, 'base64url')
        .toString()
        .replace(/"i":\d+/, '"i":0'),
    ).toString('base64url')}.${signature}`
    for (const url of [
      `/api/billing/invoices?cursor=${forged}`,
      `/api/billing/invoices?cursor=${cursor}&status=ISSUED`,
      `/api/billing/invoices?cursor=${cursor}&page=2`,
    ]) {
      const response = await app.inject({ url, headers: bearer(biller.token) })
      expect(response.statusCode, url).toBe(400)
      expect(response.json().error.code).toBe('VAL_001')
    }
  })
})

describe('GET /api/messages with updatedSince and cursor', () => {
  it('returns each message once in (updatedAt, id) order; one read during the walk comes again', async () => {
    const { sender, recipient } = await office()
    const start = new Date(Date.now() - 60_000).toISOString()
    const ids: number[] = []
    for (let i = 0; i < 5; i++) ids.push((await newMessage(sender, recipient, `Note ${i}`)).json().data.id)
    const readDuringWalk = ids[0] as number
    const { seen } = await walk(recipient, '/api/messages?folder=inbox', start, 2, async (page) => {
      if (page === 0) await markRead(recipient, readDuringWalk)
    })
    for (const id of ids.slice(1)) expect(seen.filter((item) => item.id === id)).toHaveLength(1)
    expect(seen.filter((item) => item.id === readDuringWalk).map((item) => item.version)).toEqual([1, 2])
    inOrder(seen)
    // The sender's sent folder sees the read too, and nobody else's mailbox holds these messages.
    const sent = await walk(sender, '/api/messages?folder=sent', start, 10)
    expect(sent.seen.map((item) => item.id).sort()).toEqual([...ids].sort())
    const stranger = (await office()).recipient
    expect((await walk(stranger, '/api/messages', start, 10)).seen).toEqual([])
  })

  it('returns 400 for a tampered cursor and for a cursor of the other folder', async () => {
    const { sender, recipient } = await office()
    await newMessage(sender, recipient)
    await newMessage(sender, recipient)
    const first = await app.inject({
      url: '/api/messages?updatedSince=2000-01-01T00:00:00Z&size=1',
      headers: bearer(recipient.token),
    })
    const cursor = first.json().data.nextCursor as string
    const [body, signature] = cursor.split('.') as [string, string]
    const forged = `${Buffer.from(
      Buffer.from(body, 'base64url')
        .toString()
        .replace(/"i":\d+/, '"i":0'),
    ).toString('base64url')}.${signature}`
    for (const url of [`/api/messages?cursor=${forged}`, `/api/messages?cursor=${cursor}&unread=true`]) {
      const response = await app.inject({ url, headers: bearer(recipient.token) })
      expect(response.statusCode, url).toBe(400)
    }
  })
})
