import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { buildTestApp } from '../../helpers/app.js'
import { bearer, createPatient, newOrganization, type TestUser } from '../../helpers/factories.js'
import { forgedCursor } from '../../helpers/sync-cursors.js'

let app: App

beforeAll(async () => {
  app = await buildTestApp()
})
afterAll(async () => {
  await app.close()
})

interface AuditEvent {
  id: number
  recordedAt: string
  resourceType: string
  action: string
  resourceIds: number[]
}

const listAudit = (user: TestUser, query: string) =>
  app.inject({ url: `/api/audit-events${query}`, headers: bearer(user.token) })

/** Waits until the organization has at least `count` audit records written (they are written in batches). */
async function recordedAuditEvents(organizationId: number, count: number): Promise<void> {
  for (let attempt = 0; attempt < 100; attempt++) {
    await app.auditLog.flush()
    const row = await app.db
      .selectFrom('audit_log')
      .select((eb) => eb.fn.countAll<number>().as('count'))
      .where('organization_id', '=', organizationId)
      .where('resource_type', '=', 'patient')
      .executeTakeFirstOrThrow()
    if (Number(row.count) >= count) return
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  throw new Error(`fewer than ${count} audit records were written`)
}

/** Reads sync pages from `start` until the last one: every item in order and the cursor to go on from. */
async function walk(user: TestUser, start: string, filters: string, size: number) {
  const items: AuditEvent[] = []
  let query = `?${start}&${filters}&size=${size}`
  for (let pages = 0; pages < 50; pages++) {
    const response = await listAudit(user, query)
    expect(response.statusCode).toBe(200)
    const page = response.json().data
    expect(page.content.length).toBeLessThanOrEqual(size)
    expect(page).not.toHaveProperty('totalElements')
    items.push(...page.content)
    if (page.last) return { items, cursor: page.nextCursor as string }
    query = `?cursor=${encodeURIComponent(page.nextCursor)}&${filters}&size=${size}`
  }
  throw new Error('the walk did not end')
}

/** An organization where a provider registered and read patients: 2 records per patient. */
async function practiceWithActivity(patients: number) {
  const organization = await newOrganization(app)
  const admin = await organization.user('ADMIN')
  const provider = await organization.user('PROVIDER')
  const start = new Date(Date.now() - 1000).toISOString()
  for (let n = 0; n < patients; n++) {
    const id = await createPatient(app, provider)
    await app.inject({ url: `/api/patients/${id}`, headers: bearer(provider.token) })
  }
  await recordedAuditEvents(organization.id, patients * 2)
  return { organization, admin, provider, start: `updatedSince=${encodeURIComponent(start)}` }
}

const position = (event: AuditEvent) => `${event.recordedAt}|${String(event.id).padStart(12, '0')}`

describe('GET /api/audit-events sync pages', () => {
  it('walks every record once, oldest first by (recordedAt, id), the same records as the offset list', async () => {
    const { admin, start } = await practiceWithActivity(4)
    // Listing is audited too (resourceType audit-event); the filter keeps those records out.
    const filters = 'resourceType=patient'
    const offset = (await listAudit(admin, `?${filters}&size=100`)).json().data
    expect(offset.totalElements).toBe(8)
    for (const size of [1, 3, 8, 20]) {
      const { items } = await walk(admin, start, filters, size)
      expect(items).toHaveLength(8)
      expect(new Set(items.map((item) => item.id)).size).toBe(8)
      const positions = items.map(position)
      expect([...positions].sort()).toEqual(positions)
      expect(items.map((item) => item.id).sort()).toEqual(
        offset.content.map((item: AuditEvent) => item.id).sort(),
      )
    }
  })

  it('reads records written after the walk from its last cursor, and nothing twice', async () => {
    const { organization, admin, provider, start } = await practiceWithActivity(1)
    const filters = 'resourceType=patient'
    const first = await walk(admin, start, filters, 5)
    expect(first.items).toHaveLength(2)
    const idle = (await listAudit(admin, `?cursor=${encodeURIComponent(first.cursor)}&${filters}`)).json()
    expect(idle.data).toMatchObject({ content: [], last: true, first: false })

    const later = await createPatient(app, provider)
    await recordedAuditEvents(organization.id, 3)
    const next = await walk(admin, `cursor=${encodeURIComponent(idle.data.nextCursor)}`, filters, 5)
    expect(next.items).toEqual([
      expect.objectContaining({ action: 'CREATE', resourceType: 'patient', resourceIds: [later] }),
    ])
  })

  it('keeps to the caller’s organization', async () => {
    const { admin, start } = await practiceWithActivity(1)
    await practiceWithActivity(2)
    const { items } = await walk(admin, start, 'resourceType=patient', 10)
    expect(items).toHaveLength(2)
  })

  it('returns 400 for a tampered cursor, a cursor with other filters, and sync with page or sort', async () => {
    const { admin, start } = await practiceWithActivity(2)
    const page = (await listAudit(admin, `?${start}&resourceType=patient&size=1`)).json().data
    const cursor: string = page.nextCursor
    for (const query of [
      `?cursor=${encodeURIComponent(forgedCursor(cursor))}&resourceType=patient`,
      `?cursor=${encodeURIComponent(cursor)}&resourceType=document`,
      `?cursor=${encodeURIComponent(cursor)}`,
      `?cursor=${encodeURIComponent(cursor)}&resourceType=patient&${start}`,
      `?cursor=${encodeURIComponent(cursor)}&resourceType=patient&sort=occurredAt,desc`,
      `?${start}&page=1`,
    ]) {
      const response = await listAudit(admin, query)
      expect(response.statusCode, query).toBe(400)
      expect(response.json().error.code).toBe('VAL_001')
    }
    const same = await listAudit(admin, `?cursor=${encodeURIComponent(cursor)}&resourceType=patient&size=1`)
    expect(same.statusCode).toBe(200)
    expect(same.json().data.content).toHaveLength(1)
  })

  it('still refuses from later than to on a sync read', async () => {
    const { admin, start } = await practiceWithActivity(1)
    const response = await listAudit(admin, `?${start}&from=2026-02-01T00:00:00Z&to=2026-01-01T00:00:00Z`)
    expect(response.statusCode).toBe(400)
    expect(response.json().error.details).toBe('from must not be later than to')
  })
})

describe('GET /api/audit-events sync pages and late writes', () => {
  it('shows a record written after a reader passed the time of its call', async () => {
    const { organization, admin, start } = await practiceWithActivity(1)
    const filters = 'resourceType=patient'
    const first = await walk(admin, start, filters, 5)
    // A record of a call made an hour ago, written only now (a batch retried late).
    await app.db
      .insertInto('audit_log')
      .values({
        occurred_at: new Date(Date.now() - 3_600_000),
        organization_id: organization.id,
        user_id: null,
        action: 'READ',
        resource_type: 'patient',
        resource_ids: [1],
        patient_id: null,
        outcome: 'SUCCESS',
        status_code: 200,
        request_id: 'late-batch',
      })
      .execute()
    const next = await walk(admin, `cursor=${encodeURIComponent(first.cursor)}`, filters, 5)
    expect(next.items.map((item) => (item as AuditEvent & { requestId: string }).requestId)).toEqual([
      'late-batch',
    ])
  })
})
