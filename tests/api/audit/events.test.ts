import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { buildTestApp, openTestDatabase } from '../../helpers/app.js'
import { bearer, createPatient, newOrganization, type TestUser } from '../../helpers/factories.js'

let app: App

beforeAll(async () => {
  app = await buildTestApp()
})
afterAll(async () => {
  await app.close()
})

const listAudit = (user: TestUser, query = '') =>
  app.inject({ url: `/api/audit-events${query}`, headers: bearer(user.token) })

// The audited calls practiceWithActivity makes: two registrations, two reads, a vitals list, a delete.
const ACTIVITY_EVENTS = 6

/** Checks that the calls' records were written before their responses; then puts them strictly before "now". */
async function recordedAuditEvents(organizationId: number, count: number): Promise<void> {
  const row = await app.db
    .selectFrom('audit_log')
    .select((eb) => eb.fn.countAll<number>().as('count'))
    .where('organization_id', '=', organizationId)
    .executeTakeFirstOrThrow()
  expect(Number(row.count)).toBe(count)
  await new Promise((resolve) => setTimeout(resolve, 5))
}

/** An organization where a provider registered and read two patients, and an administrator. */
async function practiceWithActivity() {
  const organization = await newOrganization(app)
  const admin = await organization.user('ADMIN')
  const provider = await organization.user('PROVIDER')
  const nurse = await organization.user('NURSE')
  const first = await createPatient(app, provider)
  const second = await createPatient(app, provider)
  await app.inject({ url: `/api/patients/${first}`, headers: bearer(provider.token) })
  await app.inject({ url: `/api/patients/${first}/vitals`, headers: bearer(nurse.token) })
  await app.inject({ url: `/api/patients/${second}`, headers: bearer(nurse.token) })
  await app.inject({ method: 'DELETE', url: `/api/patients/${second}`, headers: bearer(provider.token) })
  await recordedAuditEvents(organization.id, ACTIVITY_EVENTS)
  // Listing is audited too; bounding by this instant keeps those records out of the counts.
  const until = new Date().toISOString()
  const activity = (query = '') => listAudit(admin, `${query}${query ? '&' : '?'}to=${until}`)
  return { organization, admin, provider, nurse, first, second, until, activity }
}

describe('GET /api/audit-events', () => {
  it('returns 200 with the organization’s records, newest first, in the page shape', async () => {
    const { provider, nurse, first, activity } = await practiceWithActivity()
    const response = await activity()
    expect(response.statusCode).toBe(200)
    const body = response.json()
    expect(body.success).toBe(true)
    expect(body.data).toMatchObject({ pageable: { pageNumber: 0, pageSize: 20 }, first: true, last: true })
    const events = body.data.content
    expect(events).toHaveLength(6)
    expect(body.data.totalElements).toBe(6)
    const times = events.map((event: { occurredAt: string }) => event.occurredAt)
    expect([...times].sort().reverse()).toEqual(times)
    expect(events.at(-1)).toMatchObject({
      userId: provider.id,
      action: 'CREATE',
      resourceType: 'patient',
      resourceIds: [first],
      outcome: 'SUCCESS',
      statusCode: 201,
    })
    expect(events).toContainEqual(
      expect.objectContaining({
        userId: nurse.id,
        action: 'LIST',
        resourceType: 'vital-signs',
        patientId: first,
      }),
    )
    expect(events).toContainEqual(
      expect.objectContaining({ userId: provider.id, action: 'DELETE', outcome: 'DENIED', statusCode: 403 }),
    )
    expect(events[0].requestId).toEqual(expect.any(String))
  })

  it('filters by patient (records naming it and patient calls returning it), user, action and outcome', async () => {
    const { nurse, first, second, activity } = await practiceWithActivity()
    const ofFirst = (await activity(`?patientId=${first}`)).json().data
    expect(ofFirst.content.map((event: { action: string }) => event.action).sort()).toEqual([
      'CREATE',
      'LIST',
      'READ',
    ])
    const byNurse = (await activity(`?userId=${nurse.id}`)).json().data
    expect(byNurse.totalElements).toBe(2)
    const nurseReads = (await activity(`?userId=${nurse.id}&action=READ`)).json().data
    expect(nurseReads.content).toEqual([expect.objectContaining({ resourceIds: [second] })])
    const denied = (await activity('?outcome=DENIED&resourceType=patient')).json().data
    expect(denied.content).toEqual([expect.objectContaining({ action: 'DELETE', resourceIds: [second] })])
  })

  it('filters by time range: from inclusive, to exclusive', async () => {
    const { admin, until, activity } = await practiceWithActivity()
    const all = (await activity()).json().data.content
    const oldest = all.at(-1).occurredAt
    const newest = all[0].occurredAt
    expect((await activity(`?from=${oldest}`)).json().data.totalElements).toBe(6)
    expect((await activity(`?from=${newest}`)).json().data.totalElements).toBeGreaterThanOrEqual(1)
    expect((await listAudit(admin, `?to=${oldest}`)).json().data.totalElements).toBe(0)
    const future = new Date(Date.parse(until) + 60_000).toISOString()
    expect((await listAudit(admin, `?from=${future}`)).json().data.totalElements).toBe(0)
  })

  it('pages without overlap', async () => {
    const { activity } = await practiceWithActivity()
    const pages = await Promise.all(
      [0, 1, 2].map((page) => activity(`?size=2&page=${page}&sort=occurredAt,asc`)),
    )
    const ids = pages.flatMap((page) => page.json().data.content.map((event: { id: number }) => event.id))
    expect(new Set(ids).size).toBe(6)
    expect([...ids].sort((a, b) => a - b)).toEqual(ids)
    expect(pages[2]?.json().data).toMatchObject({ totalElements: 6, totalPages: 3, first: false, last: true })
  })

  it('never shows another organization’s records, even when asked for its patient', async () => {
    const { first } = await practiceWithActivity()
    const otherAdmin = await (await newOrganization(app)).user('ADMIN')
    expect((await listAudit(otherAdmin)).json().data.totalElements).toBe(0)
    const response = await listAudit(otherAdmin, `?patientId=${first}`)
    expect(response.statusCode).toBe(200)
    expect(response.json().data.totalElements).toBe(0)
  })

  it('is itself audited', async () => {
    const { admin } = await practiceWithActivity()
    await listAudit(admin)
    await app.auditLog.flush()
    const own = (await listAudit(admin, '?resourceType=audit-event')).json().data
    expect(own.content).toEqual([
      expect.objectContaining({ userId: admin.id, action: 'LIST', outcome: 'SUCCESS' }),
    ])
  })

  it('returns 403 AUTH_003 to any role but ADMIN and 401 AUTH_001 without a token', async () => {
    const organization = await newOrganization(app)
    for (const role of ['PROVIDER', 'NURSE', 'FRONT_DESK', 'BILLING'] as const) {
      const response = await listAudit(await organization.user(role))
      expect(response.statusCode).toBe(403)
      expect(response.json().error.code).toBe('AUTH_003')
    }
    const anonymous = await app.inject({ url: '/api/audit-events' })
    expect(anonymous.statusCode).toBe(401)
    expect(anonymous.json().error.code).toBe('AUTH_001')
  })

  it('returns 400 VAL_001 for an unknown action, a malformed time, a reversed range or an unknown parameter', async () => {
    const admin = await (await newOrganization(app)).user('ADMIN')
    for (const query of [
      '?action=PEEK',
      '?from=yesterday',
      '?from=2026-01-02T00:00:00Z&to=2026-01-01T00:00:00Z',
      '?patient=1',
      '?sort=userId,asc',
      '?size=101',
    ]) {
      const response = await listAudit(admin, query)
      expect(response.statusCode, query).toBe(400)
      expect(response.json().error.code, query).toBe('VAL_001')
    }
  })
})

describe('audit records at shutdown', () => {
  it('writes the records kept after a failed write when the app closes, before the database closes', async () => {
    const handle = await openTestDatabase()
    // The audit inserts fail while this table holds a row, as while the database refuses them.
    await sql`create table audit_refused (refused boolean)`.execute(handle.db)
    await sql`create function refuse_audit() returns trigger language plpgsql as $$
      begin
        if exists (select 1 from audit_refused) then raise exception 'audit refused'; end if;
        return new;
      end $$`.execute(handle.db)
    await sql`create trigger refuse_audit before insert on audit_log for each row
      execute function refuse_audit()`.execute(handle.db)
    let writtenWhenDatabaseClosed = -1
    const closing = await buildTestApp(
      // Long enough that the timer never retries during this test: only close() can write them.
      { AUDIT_FLUSH_INTERVAL_MS: '60000' },
      undefined,
      {
        database: {
          ...handle,
          close: async () => {
            writtenWhenDatabaseClosed = Number(
              (
                await handle.db
                  .selectFrom('audit_log')
                  .select((eb) => eb.fn.countAll<number>().as('count'))
                  .where('organization_id', '=', organizationId)
                  .executeTakeFirstOrThrow()
              ).count,
            )
            await handle.close()
          },
        },
      },
    )
    const organization = await newOrganization(closing)
    const organizationId = organization.id
    const provider = await organization.user('PROVIDER')
    const patientId = await createPatient(closing, provider)
    await sql`insert into audit_refused values (true)`.execute(handle.db)
    for (let attempt = 0; attempt < 5; attempt += 1) {
      // Unrecorded, the read is withheld; the record of the 503 is kept for a later try.
      const read = await closing.inject({
        url: `/api/patients/${patientId}`,
        headers: bearer(provider.token),
      })
      expect(read.statusCode).toBe(503)
    }
    expect(closing.auditLog.buffered).toBe(5)
    await sql`delete from audit_refused`.execute(handle.db)

    await closing.close()
    expect(closing.auditLog.buffered).toBe(0)
    expect(writtenWhenDatabaseClosed).toBe(6)
  })
})
