import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { FeedWaiter } from '../../../src/modules/events/feed-waiter.js'
import { feedMark } from '../../../src/modules/events/queries.js'
import { readChangeFeed } from '../../../src/modules/events/service.js'
import { buildTestApp } from '../../helpers/app.js'
import { comparePositions } from '../../helpers/change-feed.js'
import { bearer, createPatient, newOrganization, type TestUser } from '../../helpers/factories.js'

let app: App

beforeAll(async () => {
  app = await buildTestApp()
})
afterAll(async () => {
  await app.close()
})

interface FeedEvent {
  position: string
  event: string
  timestamp: string
  data: Record<string, unknown>
}
interface Feed {
  events: FeedEvent[]
  position: string
  caughtUp: boolean
}

const readFeed = (user: TestUser, query = '') =>
  app.inject({ url: `/api/events${query ? `?${query}` : ''}`, headers: bearer(user.token) })

async function feed(user: TestUser, query = ''): Promise<Feed> {
  const response = await readFeed(user, query)
  expect(response.statusCode, response.body).toBe(200)
  expect(response.json()).toMatchObject({ success: true, message: 'Events retrieved' })
  return response.json().data
}

/** The stored payloads of an organization's events, in id order (one writer at a time here). */
async function storedPayloads(organizationId: number) {
  const rows = await app.db
    .selectFrom('outbox_events')
    .select(['id', 'payload'])
    .where('organization_id', '=', organizationId)
    .orderBy('id')
    .execute()
  return rows.map((row) => row.payload)
}

/**
 * Waits until the organization's events are below the horizon: on a shared PostgreSQL server, a
 * transaction of another test (another database, same server) may still be open and hold them
 * back for a moment, as the feed's ordering rule says it must.
 */
async function settled(organizationId: number): Promise<void> {
  for (let attempt = 0; attempt < 500; attempt++) {
    const { rows } = await sql<{ settled: boolean }>`
      select coalesce(max(transaction_id) < pg_snapshot_xmin(pg_current_snapshot()), true) as settled
      from outbox_events where organization_id = ${organizationId}`.execute(app.db)
    if (rows[0]?.settled) return
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  const { rows } = await sql<{ datname: string; state: string; age: string; query: string }>`
    select datname, state, (now() - xact_start)::text as age, left(query, 120) as query
    from pg_stat_activity where backend_xid is not null`.execute(app.db)
  throw new Error(`events still held back after 10 s by ${JSON.stringify(rows)}`)
}

/** An organization with an administrator, a provider and `patients` registered, the last one deleted. */
async function practice(patients = 3) {
  const organization = await newOrganization(app)
  const admin = await organization.user('ADMIN')
  const provider = await organization.user('PROVIDER')
  const ids: number[] = []
  for (let i = 0; i < patients; i++) ids.push(await createPatient(app, provider))
  const deleted = await app.inject({
    method: 'DELETE',
    url: `/api/patients/${ids.at(-1)}`,
    headers: bearer(admin.token),
  })
  expect(deleted.statusCode).toBe(200)
  await settled(organization.id)
  return { organization, admin, provider, ids }
}

/** Reads the feed from `after` in pages until caught up; bounded by `maxPages`. */
async function walk(user: TestUser, query: string, after?: string, maxPages = 100) {
  const pages: Feed[] = []
  let position = after
  for (let i = 0; i < maxPages; i++) {
    const page = await feed(user, [query, position ? `after=${position}` : ''].filter(Boolean).join('&'))
    pages.push(page)
    position = page.position
    if (page.caughtUp) return { pages, events: pages.flatMap((p) => p.events), position }
  }
  throw new Error(`not caught up after ${maxPages} pages`)
}

describe('GET /api/events', () => {
  it('returns 200 with every event in order, each the body webhooks carry plus its position', async () => {
    const { organization, admin, ids } = await practice(3)
    const body = await feed(admin)
    const stored = await storedPayloads(organization.id)
    expect(stored).toHaveLength(4)
    expect(body.events.map(({ event, timestamp, data }) => ({ event, timestamp, data }))).toEqual(stored)
    expect(body.events.map((e) => [e.event, e.data.id])).toEqual([
      ['patient.created', ids[0]],
      ['patient.created', ids[1]],
      ['patient.created', ids[2]],
      ['patient.updated', ids[2]],
    ])
    expect(body.events.at(-1)?.data).toMatchObject({ deleted: true })
    const positions = body.events.map((e) => e.position)
    for (const position of positions) expect(position).toMatch(/^[0-9]+-[0-9]+$/)
    for (let i = 1; i < positions.length; i++)
      expect(comparePositions(positions[i - 1] as string, positions[i] as string)).toBe(-1)
    expect(body.caughtUp).toBe(true)
    expect(comparePositions(body.position, positions.at(-1) as string)).toBe(1)

    const again = await feed(admin, `after=${body.position}`)
    expect(again).toMatchObject({ events: [], caughtUp: true })
    expect(comparePositions(again.position, body.position)).toBeGreaterThanOrEqual(0)
  })

  it('returns only the events named in types', async () => {
    const { admin, ids } = await practice(2)
    const updated = await feed(admin, 'types=patient.updated')
    expect(updated.events.map((e) => [e.event, e.data.id])).toEqual([['patient.updated', ids[1]]])
    const both = await feed(admin, 'types=patient.updated,patient.created,patient.created')
    expect(both.events).toHaveLength(3)
    const none = await feed(admin, 'types=invoice.created')
    expect(none).toMatchObject({ events: [], caughtUp: true })
  })

  it('walks every event exactly once in pages of `limit`, resuming from the answer’s position', async () => {
    const { admin } = await practice(6)
    const all = (await feed(admin)).events
    expect(all).toHaveLength(7)

    const { pages, events } = await walk(admin, 'limit=2')
    expect(events).toEqual(all)
    expect(pages.map((p) => p.events.length)).toEqual([2, 2, 2, 1])
    expect(pages.map((p) => p.caughtUp)).toEqual([false, false, false, true])
    // A full page ends at its last event; the reader resumes exactly after it.
    expect(pages[0]?.position).toBe(pages[0]?.events[1]?.position)

    // Resuming mid-page from an event's own position gives the events after it.
    const third = all[2] as FeedEvent
    expect((await feed(admin, `after=${third.position}`)).events).toEqual(all.slice(3))

    // With a types filter, the pages hold the matching events only, still each once.
    const created = await walk(admin, 'limit=4&types=patient.created')
    expect(created.events).toEqual(all.filter((e) => e.event === 'patient.created'))
  })

  it('starts at the horizon with after=now: no earlier event, every later one', async () => {
    const { admin, provider } = await practice(2)
    const now = await feed(admin, 'after=now')
    expect(now).toMatchObject({ events: [], caughtUp: true })
    const later = await createPatient(app, provider)
    await settled(admin.organizationId)
    const next = await feed(admin, `after=${now.position}`)
    expect(next.events.map((e) => [e.event, e.data.id])).toEqual([['patient.created', later]])
  })

  it('never returns another organization’s events', async () => {
    const ours = await practice(2)
    const theirs = await practice(3)
    const ourEvents = (await feed(ours.admin)).events
    const theirEvents = (await feed(theirs.admin)).events
    expect(ourEvents.map((e) => e.data.id)).toEqual([...ours.ids, ours.ids[1]])
    expect(theirEvents.map((e) => e.data.id)).toEqual([...theirs.ids, theirs.ids[2]])
    const positions = new Set(ourEvents.map((e) => e.position))
    expect(theirEvents.some((e) => positions.has(e.position))).toBe(false)
    // Another organization's position only moves the reader along its own events.
    const fromTheirs = await feed(ours.admin, `after=${theirEvents[0]?.position}`)
    expect(fromTheirs.events.every((e) => ours.ids.includes(e.data.id as number))).toBe(true)
  })

  it('returns 403 AUTH_003 to every role but ADMIN, and 401 without a token', async () => {
    const organization = await newOrganization(app)
    for (const role of ['PROVIDER', 'NURSE', 'FRONT_DESK', 'BILLING'] as const) {
      const response = await readFeed(await organization.user(role))
      expect(response.statusCode, role).toBe(403)
      expect(response.json()).toMatchObject({ success: false, error: { code: 'AUTH_003' } })
    }
    const anonymous = await app.inject({ url: '/api/events' })
    expect(anonymous.statusCode).toBe(401)
  })

  it('returns 400 VAL_001 for a malformed after, an unknown event name, or a limit or wait out of range', async () => {
    const admin = await (await newOrganization(app)).user('ADMIN')
    for (const query of [
      'after=abc',
      'after=12',
      'after=12-',
      'after=-12',
      'after=012-3',
      'after=1-2-3',
      'after=NOW',
      'after=99999999999999999999-1',
      'after=1-9999999999999999999',
      'types=patient.deleted',
      'types=patient.created,',
      'types=*',
      'types=',
      'limit=0',
      'limit=1001',
      'limit=ten',
      'wait=-1',
      'wait=31',
      'cursor=abc',
    ]) {
      const response = await readFeed(admin, query)
      expect(response.statusCode, query).toBe(400)
      expect(response.json(), query).toMatchObject({ success: false, error: { code: 'VAL_001' } })
    }
  })

  it('answers a long poll as soon as an event commits', async () => {
    const { admin, provider } = await practice(1)
    // Measured from when the event became readable, which a plain read sees, not from the poll's
    // start: on PostgreSQL any open transaction of the server (another test's too) holds events
    // back a while. Woken by the waiter, the poll answers at about that moment; by the
    // once-a-second recheck, anywhere up to a second later, so three rounds in a row within half a
    // second do not happen by chance.
    for (let round = 0; round < 3; round++) {
      const { position } = await feed(admin)
      let answeredAt = 0
      const polled = readFeed(admin, `after=${position}&wait=5`).then((response) => {
        answeredAt = Date.now()
        return response
      })
      await new Promise((resolve) => setTimeout(resolve, 200))
      expect(answeredAt, 'answered before anything committed').toBe(0)
      const created = await createPatient(app, provider)
      let readableAt = Date.now()
      for (let probe = 0; probe < 1000 && answeredAt === 0; probe++) {
        const started = Date.now()
        if ((await feed(admin, `after=${position}`)).events.length > 0) {
          readableAt = started
          break
        }
      }
      const response = await polled
      expect(response.statusCode).toBe(200)
      expect(response.json().data.events.map((e: FeedEvent) => e.data.id)).toEqual([created])
      expect(answeredAt - readableAt, `round ${round}`).toBeLessThan(500)
    }
  })

  it('answers a long poll with no events once the wait is over, from where it started', async () => {
    const { admin } = await practice(1)
    const { position } = await feed(admin)
    const started = Date.now()
    const body = await feed(admin, `after=${position}&wait=1`)
    const elapsed = Date.now() - started
    expect(body).toMatchObject({ events: [], caughtUp: true })
    expect(comparePositions(body.position, position)).toBeGreaterThanOrEqual(0)
    expect(elapsed).toBeGreaterThanOrEqual(900)
    expect(elapsed).toBeLessThan(2500)
  })

  it('stops waiting when the client goes away', async () => {
    const { admin } = await practice(1)
    const principal = { organizationId: admin.organizationId } as Parameters<typeof readChangeFeed>[2]
    const waiter = new FeedWaiter(() => feedMark(app.db))
    const caller = new AbortController()
    try {
      const started = Date.now()
      const reading = readChangeFeed(
        app.db,
        waiter,
        principal,
        { after: 'now', limit: 10, wait: 10 },
        caller.signal,
      )
      await expect.poll(() => waiter.waiting, { timeout: 2000, interval: 10 }).toBe(1)
      caller.abort()
      const page = await reading
      expect(page.events).toEqual([])
      expect(Date.now() - started).toBeLessThan(2000)
      expect(waiter.waiting).toBe(0)
    } finally {
      await waiter.close()
    }
  })

  it('ends held long polls at once when the app closes', async () => {
    const own = await buildTestApp()
    const admin = await (await newOrganization(own)).user('ADMIN')
    const started = Date.now()
    const polled = own.inject({ url: '/api/events?after=now&wait=20', headers: bearer(admin.token) })
    await new Promise((resolve) => setTimeout(resolve, 300))
    await own.close()
    const response = await polled
    expect(response.statusCode).toBe(200)
    expect(response.json().data.events).toEqual([])
    expect(Date.now() - started).toBeLessThan(5000)
  })
})
