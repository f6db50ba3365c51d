import { randomBytes } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { sql } from 'kysely'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import {
  type Acknowledged,
  countFindings,
  type Findings,
  type Operation,
  problemCount,
} from '../../scripts/drill-crash/count.js'
import type { App } from '../../src/app.js'
import { buildTestApp } from '../helpers/app.js'
import { bearer, newOrganization, patientBody, type TestUser } from '../helpers/factories.js'
import { multipart } from '../helpers/multipart.js'

let app: App
let user: TestUser
let dataDir: string

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(tmpdir(), 'ehr-drill-count-'))
  app = await buildTestApp({ DATA_DIR: dataDir })
})
// The counts cover the whole organization (half-written rows): each test has one of its own.
beforeEach(async () => {
  user = await (await newOrganization(app)).user('ADMIN', 'PROVIDER')
})
afterAll(async () => {
  await app.close()
  await rm(dataDir, { recursive: true, force: true })
})

/** Sends a request as the drill's clients do (its own X-Request-Id) and records it once acknowledged. */
async function acknowledged(
  operation: Operation,
  request: { method: 'GET' | 'POST'; url: string; payload?: unknown; headers?: Record<string, string> },
): Promise<Acknowledged & { data: { id: number; total?: number } }> {
  const requestId = `drill-test-${randomBytes(6).toString('hex')}`
  const response = await app.inject({
    method: request.method,
    url: request.url,
    headers: { ...bearer(user.token), 'x-request-id': requestId, ...request.headers },
    payload: request.payload as string,
  })
  expect(response.statusCode, response.body).toBeLessThan(300)
  const { data } = response.json() as { data: { id: number; total?: number } }
  return { operation, requestId, id: data.id, data }
}

/** A day's acknowledged requests of every kind the drill makes but booking (which needs a provider). */
async function acknowledgedDay(): Promise<Acknowledged[]> {
  const patient = await acknowledged('create patient', {
    method: 'POST',
    url: '/api/patients',
    payload: patientBody(),
  })
  const read = await acknowledged('read patient', { method: 'GET', url: `/api/patients/${patient.id}` })
  const invoice = await acknowledged('create invoice', {
    method: 'POST',
    url: '/api/billing/invoices',
    payload: {
      patientId: patient.id,
      dueDate: '2099-01-31',
      lineItems: [{ code: '99213', description: 'Office visit', quantity: 1, unitPrice: 12_500 }],
    },
  })
  const payment = await acknowledged('record payment', {
    method: 'POST',
    url: '/api/billing/payments',
    headers: { 'idempotency-key': randomBytes(16).toString('hex') },
    payload: { invoiceId: invoice.id, amount: invoice.data.total, method: 'CARD' },
  })
  const body = multipart([
    ['title', 'Visit summary'],
    ['category', 'CLINICAL_NOTE'],
    { fileName: 'summary.pdf', contentType: 'application/pdf', content: Buffer.from('%PDF-1.4\n%%EOF\n') },
  ])
  const document = await acknowledged('upload document', {
    method: 'POST',
    url: `/api/patients/${patient.id}/documents`,
    headers: body.headers,
    payload: body.payload,
  })
  return [patient, read, invoice, payment, document].map(({ operation, requestId, id }) => ({
    operation,
    requestId,
    id,
  }))
}

const count = (entries: Acknowledged[]) =>
  countFindings(app.db, {
    organizationId: user.organizationId,
    userId: user.id,
    acknowledged: entries,
    documentsDir: path.join(dataDir, 'documents'),
  })

/** The findings once every audit record of the requests is written (they may be written after the answer). */
async function settled(entries: Acknowledged[]): Promise<Findings> {
  const deadline = Date.now() + 10_000
  for (;;) {
    const findings = await count(entries)
    if (findings.missingAudit.length === 0 || Date.now() > deadline) return findings
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

const brief = (found: { operation: string; requestId: string }[]) =>
  found.map(({ operation, requestId }) => ({ operation, requestId }))

describe('countFindings (npm run drill:crash)', () => {
  it('reports no problem when every acknowledged request left its record, audit record and event', async () => {
    const entries = await acknowledgedDay()

    const findings = await settled(entries)

    expect(findings.acknowledged).toBe(5)
    expect(problemCount(findings)).toBe(0)
  })

  it('reports the acknowledged request whose audit record is missing', async () => {
    const entries = await acknowledgedDay()
    await settled(entries)
    const lost = entries.find((entry) => entry.operation === 'create invoice') as Acknowledged
    await sql`delete from audit_log where request_id = ${lost.requestId}`.execute(app.db)

    const findings = await count(entries)

    expect(brief(findings.missingAudit)).toEqual([{ operation: 'create invoice', requestId: lost.requestId }])
    expect(findings.missingRecords).toEqual([])
    expect(problemCount(findings)).toBe(1)
  })

  it('reports a missing outbox event, an unfinished document and an invoice without lines', async () => {
    const entries = await acknowledgedDay()
    await settled(entries)
    const idOf = (operation: Operation) =>
      (entries.find((entry) => entry.operation === operation) as Acknowledged).id
    await sql`delete from outbox_events where event_type = 'payment.received'
      and payload->'data'->>'id' = ${String(idOf('record payment'))}`.execute(app.db)
    await sql`update documents set status = 'PENDING' where id = ${idOf('upload document')}`.execute(app.db)
    await sql`update invoices set line_items = '[]'::jsonb where id = ${idOf('create invoice')}`.execute(
      app.db,
    )

    const findings = await count(entries)

    expect(brief(findings.missingEvents)).toEqual([
      { operation: 'record payment', requestId: expect.any(String) },
    ])
    expect(brief(findings.missingRecords)).toEqual([
      { operation: 'upload document', requestId: expect.any(String) },
    ])
    expect(findings.interruptedUploads).toBe(1)
    expect(findings.halfWritten.filter((check) => check.count > 0)).toEqual([
      { invariant: 'payments without their payment.received event', count: 1 },
      { invariant: 'invoices without line items', count: 1 },
      { invariant: 'invoices whose totals disagree with their lines', count: 1 },
    ])
    expect(findings.missingAudit).toEqual([])
  })

  it('reports an available document whose bytes are gone', async () => {
    const entries = await acknowledgedDay()
    await settled(entries)
    const upload = entries.find((entry) => entry.operation === 'upload document') as Acknowledged
    const { rows } = await sql<{ storage_key: string }>`select storage_key from documents
      where id = ${upload.id}`.execute(app.db)
    const key = rows[0]?.storage_key as string
    await rm(path.join(dataDir, 'documents', key.slice(0, 2), key))

    const findings = await count(entries)

    expect(findings.halfWritten.filter((check) => check.count > 0)).toEqual([
      { invariant: 'available documents whose bytes are missing or cut short', count: 1 },
    ])
    expect(problemCount(findings)).toBe(1)
  })
})
