import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openPostgres } from '../../db/postgres.js'
import type { App } from '../../src/app.js'
import { buildTestApp, newPostgresDatabase } from '../helpers/app.js'
import { comparePositions } from '../helpers/change-feed.js'
import { bearer, newOrganization, type TestUser } from '../helpers/factories.js'

// Writers here are plain sessions on the database, so that a test controls exactly when each
// transaction takes its id, writes its event and commits. A transaction held open holds back the
// feed of every database on the server (transaction ids are the server's), so each is held only
// as long as its test needs: other test files read their feeds meanwhile.

let url: string
let app: App
const clients: pg.Client[] = []

beforeAll(async () => {
  url = await newPostgresDatabase()
  app = await buildTestApp({}, undefined, { database: openPostgres({ url, poolMax: 10 }) })
})
afterAll(async () => {
  await Promise.all(clients.map((client) => client.end().catch(() => {})))
  await app.close()
})

async function session(): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  clients.push(client)
  return client
}

interface FeedEvent {
  position: string
  event: string
  data: { id: number }
}
interface Feed {
  events: FeedEvent[]
  position: string
  caughtUp: boolean
}

async function readFeed(admin: TestUser, query: string): Promise<Feed> {
  const response = await app.inject({ url: `/api/events?${query}`, headers: bearer(admin.token) })
  expect(response.statusCode, response.body).toBe(200)
  return response.json().data
}

/**
 * Reads on from `after` until `count` events have come (or 10 s), as a follower would: another
 * test's transaction on the same server may hold the newest events back for a moment.
 */
async function readUntil(admin: TestUser, after: string, count: number) {
  const events: FeedEvent[] = []
  let position = after
  const deadline = Date.now() + 10_000
  while (events.length < count && Date.now() < deadline) {
    const page = await readFeed(admin, `after=${position}&wait=1`)
    events.push(...page.events)
    position = page.position
  }
  return events
}

/** Writes one event in the session's open transaction, as the outbox does; returns its id and position. */
async function writeEvent(client: pg.Client, organizationId: number, label: number) {
  const { rows } = await client.query<{ id: string; transaction_id: string }>(
    `insert into outbox_events (organization_id, event_type, payload)
     values ($1, 'patient.created', jsonb_build_object('event', 'patient.created', 'timestamp', now(), 'data', jsonb_build_object('id', $2::int)))
     returning id::text, transaction_id::text`,
    [organizationId, label],
  )
  const row = rows[0] as { id: string; transaction_id: string }
  return { id: Number(row.id), position: `${row.transaction_id}-${row.id}` }
}

async function practice() {
  const organization = await newOrganization(app)
  return { organization, admin: await organization.user('ADMIN') }
}

describe('GET /api/events with transactions committing out of order', () => {
  it('holds back a later event until an earlier transaction commits, then hands out both in order', async () => {
    const { organization, admin } = await practice()
    const start = (await readFeed(admin, 'after=now')).position
    const a = await session()
    const b = await session()

    // A takes the smaller transaction id and the smaller event id, and commits last.
    await a.query('begin')
    const first = await writeEvent(a, organization.id, 1)
    await b.query('begin')
    const second = await writeEvent(b, organization.id, 2)
    await b.query('commit')
    expect(comparePositions(first.position, second.position)).toBe(-1)

    const early = await readFeed(admin, `after=${start}`)
    expect(early.events).toEqual([])
    expect(early.caughtUp).toBe(true)
    // The reader is not moved past the event still being written.
    expect(comparePositions(early.position, first.position)).toBe(-1)

    await a.query('commit')
    const late = await readUntil(admin, early.position, 2)
    expect(late.map((e) => [e.position, e.data.id])).toEqual([
      [first.position, 1],
      [second.position, 2],
    ])
  })

  it('orders by transaction, not by event id: an event written later in an older transaction comes first', async () => {
    const { organization, admin } = await practice()
    const start = (await readFeed(admin, 'after=now')).position
    const a = await session()
    const b = await session()

    // A takes its transaction id first but writes its event after B's: a larger event id.
    await a.query('begin')
    await a.query('select pg_current_xact_id()')
    await b.query('begin')
    const fromB = await writeEvent(b, organization.id, 20)
    await b.query('commit')
    const fromA = await writeEvent(a, organization.id, 10)
    expect(fromA.id).toBeGreaterThan(fromB.id)
    expect(comparePositions(fromA.position, fromB.position)).toBe(-1)

    const early = await readFeed(admin, `after=${start}`)
    expect(early.events).toEqual([])
    expect(comparePositions(early.position, fromA.position)).toBe(-1)

    await a.query('commit')
    const late = await readUntil(admin, early.position, 2)
    expect(late.map((e) => e.data.id)).toEqual([10, 20])
  })

  it('wakes a long poll when the older transaction commits and hands out what it held back', async () => {
    const { organization, admin } = await practice()
    const start = (await readFeed(admin, 'after=now')).position
    const a = await session()
    const b = await session()
    await a.query('begin')
    await writeEvent(a, organization.id, 1)
    await b.query('begin')
    await writeEvent(b, organization.id, 2)
    await b.query('commit')

    const started = Date.now()
    const polled = readFeed(admin, `after=${start}&wait=5`)
    await new Promise((resolve) => setTimeout(resolve, 300))
    await a.query('commit')
    const answer = await polled
    expect(Date.now() - started).toBeLessThan(3000)
    const rest = await readUntil(admin, answer.position, 2 - answer.events.length)
    expect([...answer.events, ...rest].map((e) => e.data.id)).toEqual([1, 2])
  })

  it('wakes a long poll as soon as a transaction that wrote nothing stops holding its event back', async () => {
    const { organization, admin } = await practice()
    const start = (await readFeed(admin, 'after=now')).position
    const holder = await session()
    const writer = await session()
    await holder.query('begin')
    await holder.query('select pg_current_xact_id()')
    await writer.query('begin')
    await writeEvent(writer, organization.id, 1)
    await writer.query('commit')

    let answeredAt = 0
    const polled = readFeed(admin, `after=${start}&wait=10`).then((answer) => {
      answeredAt = Date.now()
      return answer
    })
    // Long enough for the poll to have been woken by the event and to have found it held back.
    await new Promise((resolve) => setTimeout(resolve, 400))
    expect(answeredAt).toBe(0)
    await holder.query('commit')
    // Counted from when a plain read first returns the event: another test's transaction on the
    // same server may hold it back a little longer than ours did.
    let readableAt = Date.now()
    for (let probe = 0; probe < 2000 && answeredAt === 0; probe++) {
      const started = Date.now()
      if ((await readFeed(admin, `after=${start}`)).events.length > 0) {
        readableAt = started
        break
      }
    }
    const answer = await polled
    expect(answer.events.map((e) => e.data.id)).toEqual([1])
    // The once-a-second recheck alone would answer anywhere up to a second later.
    expect(answeredAt - readableAt).toBeLessThan(500)
  })

  it('gives a reader following the feed every event of many concurrent writers exactly once, in position order', async () => {
    const { organization, admin } = await practice()
    const start = (await readFeed(admin, 'after=now')).position
    const WRITERS = 6
    const TRANSACTIONS = 15
    const pause = () => new Promise((resolve) => setTimeout(resolve, Math.floor(Math.random() * 6)))
    const committed: number[] = []
    const rolledBack: number[] = []
    let label = 0

    const writers = Array.from({ length: WRITERS }, async () => {
      const client = await session()
      for (let t = 0; t < TRANSACTIONS; t++) {
        await client.query('begin')
        // Some transactions take their id well before they write, so ids and commits interleave.
        if (Math.random() < 0.3) await client.query('select pg_current_xact_id()')
        await pause()
        const written: number[] = []
        const events = 1 + Math.floor(Math.random() * 3)
        for (let e = 0; e < events; e++) {
          label += 1
          written.push(label)
          await writeEvent(client, organization.id, label)
          await pause()
        }
        if (Math.random() < 0.1) {
          await client.query('rollback')
          rolledBack.push(...written)
        } else {
          await client.query('commit')
          committed.push(...written)
        }
      }
    })
    let writing = true
    const done = Promise.all(writers).finally(() => {
      writing = false
    })

    const seen: FeedEvent[] = []
    let position = start
    const deadline = Date.now() + 60_000
    // Follows the feed while the writers run, then until it has as many events as were committed.
    for (let read = 0; Date.now() < deadline; read++) {
      if (!writing && seen.length >= committed.length) break
      const limit = 1 + (read % 7)
      const page = await readFeed(admin, `after=${position}&limit=${limit}&wait=${read % 3 === 0 ? 1 : 0}`)
      seen.push(...page.events)
      expect(comparePositions(page.position, position)).toBeGreaterThanOrEqual(0)
      position = page.position
    }
    await done
    // Nothing more comes after that: no duplicate, no event of a rolled-back transaction.
    seen.push(...(await readFeed(admin, `after=${position}&wait=1`)).events)

    const labels = seen.map((e) => e.data.id)
    expect(new Set(labels).size).toBe(labels.length)
    expect([...labels].sort((x, y) => x - y)).toEqual([...committed].sort((x, y) => x - y))
    expect(labels.filter((l) => rolledBack.includes(l))).toEqual([])
    for (let i = 1; i < seen.length; i++) {
      expect(comparePositions((seen[i - 1] as FeedEvent).position, (seen[i] as FeedEvent).position)).toBe(-1)
    }
    expect(committed.length).toBeGreaterThan(WRITERS * TRANSACTIONS)
  })
})
