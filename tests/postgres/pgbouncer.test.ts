import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { DatabaseHandle } from '../../db/connect.js'
import { openPrimaryDatabase } from '../../db/open-databases.js'
import { openPostgres } from '../../db/postgres.js'
import type { App } from '../../src/app.js'
import { loadConfig } from '../../src/config.js'
import type { HousekeepingRun } from '../../src/plugins/housekeeping.js'
import { buildTestApp, newPostgresDatabase, testEnvironment } from '../helpers/app.js'
import {
  bearer,
  createPatient,
  daysFromToday,
  everyDay,
  patientBody,
  tokenFor,
} from '../helpers/factories.js'
import { book, newPractice } from '../helpers/scheduling.js'
import { type PgBouncer, startPgBouncer } from '../helpers/servers/pgbouncer.js'
import { type Receiver, startReceiver } from '../helpers/servers/webhook-receiver.js'
import { createPatientAs, registerWebhook } from '../helpers/webhooks.js'

// Two instances of the service share one PgBouncer (transaction pooling, PgBouncer 1.18 as Debian
// ships it) with fewer server connections than their pools have clients, so that their
// transactions take turns on the same server sessions, as in production behind a pooler.
const POOL_SIZE = 4
const QUERY_TIMEOUT_MS = 3000
// The housekeeping job's lock key, as in src/plugins/housekeeping.ts, in the halves pg_locks shows.
const LOCK_KEY = 0x6568_7268_6f75_7365n
const LOCK_CLASSID = Number(LOCK_KEY >> 32n)
const LOCK_OBJID = Number(LOCK_KEY & 0xffff_ffffn)

let bouncer: PgBouncer
let directUrl: string
let receiver: Receiver
let a: App
let b: App

/** The service as configured behind PgBouncer: pooled through it, sessions direct. */
async function appBehindPgBouncer(environment: Record<string, string>): Promise<App> {
  const settings = {
    DATABASE_URL: bouncer.urlOf(directUrl),
    DATABASE_DIRECT_URL: directUrl,
    DATABASE_PREPARED_STATEMENTS: '0',
    DATABASE_QUERY_TIMEOUT_MS: String(QUERY_TIMEOUT_MS),
    MAIL_TRANSPORT: 'log',
    ...environment,
  }
  const database = await openPrimaryDatabase(loadConfig(testEnvironment(settings)).database, {
    onPoolError: () => {},
  })
  return buildTestApp(settings, undefined, { database })
}

beforeAll(async () => {
  directUrl = await newPostgresDatabase()
  bouncer = await startPgBouncer({
    serverUrl: directUrl,
    poolSize: POOL_SIZE,
    statementTimeoutMs: QUERY_TIMEOUT_MS,
  })
  receiver = await startReceiver()
  a = await appBehindPgBouncer({
    OUTBOX_WORKER: 'true',
    WEBHOOK_ALLOW_HTTP: 'true',
    WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
    // Practically no polling: only NOTIFY can wake the worker promptly.
    OUTBOX_POLL_INTERVAL_MS: '600000',
  })
  b = await appBehindPgBouncer({})
})
afterAll(async () => {
  await a?.close()
  await b?.close()
  await receiver?.close()
  await bouncer?.stop()
})

const DAY = daysFromToday(12)
const timeAt = (minutes: number) =>
  `${String(Math.floor(minutes / 60)).padStart(2, '0')}:${String(minutes % 60).padStart(2, '0')}:00`

describe('the service behind PgBouncer in transaction mode', () => {
  it('serves concurrent writes and reads from two instances, the double-booking guard included', async () => {
    const practice = await newPractice(a, { weeklyHours: everyDay(['08:00', '18:00']) })
    const asNurseOn = (app: App) => ({ ...practice.nurse, token: tokenFor(app, practice.nurse) })
    const instances = [a, b]

    const bodies = Array.from({ length: 20 }, () => patientBody())
    const ids = await Promise.all(
      bodies.map((body, i) => {
        const app = instances[i % 2] as App
        return createPatient(app, asNurseOn(app), body)
      }),
    )
    expect(new Set(ids).size).toBe(20)
    const reads = await Promise.all(
      ids.map((id, i) => {
        const app = instances[(i + 1) % 2] as App
        return app.inject({ url: `/api/patients/${id}`, headers: bearer(asNurseOn(app).token) })
      }),
    )
    expect(reads.map((response) => response.statusCode)).toEqual(ids.map(() => 200))
    expect(reads.map((response) => response.json().data.identification.lastName)).toEqual(
      bodies.map((body) => body.identification.lastName),
    )

    // Hour-long bookings starting between 09:40 and 10:03 all overlap: exactly one may succeed.
    const overlapping = await Promise.all(
      Array.from({ length: 24 }, (_, i) => {
        const app = instances[i % 2] as App
        return book(app, asNurseOn(app), {
          patientId: ids[i % ids.length],
          providerId: practice.provider.id,
          appointmentDate: DAY,
          appointmentTime: timeAt(9 * 60 + 40 + i),
          duration: 60,
        })
      }),
    )
    const statuses = overlapping.map((response) => response.statusCode)
    expect(statuses.filter((status) => status === 201)).toHaveLength(1)
    expect(statuses.filter((status) => status === 409)).toHaveLength(23)
    // Bookings that do not overlap all succeed, side by side.
    const separate = await Promise.all(
      [12, 13, 14, 15, 16, 17].map((hour, i) => {
        const app = instances[i % 2] as App
        return book(app, asNurseOn(app), {
          patientId: ids[i],
          providerId: practice.provider.id,
          appointmentDate: DAY,
          appointmentTime: timeAt(hour * 60),
          duration: 30,
        })
      }),
    )
    expect(separate.map((response) => response.statusCode)).toEqual([201, 201, 201, 201, 201, 201])
    const list = await b.inject({
      url: `/api/appointments?providerId=${practice.provider.id}&size=50`,
      headers: bearer(asNurseOn(b).token),
    })
    expect(list.statusCode).toBe(200)
    expect(list.json().data.totalElements).toBe(7)
  })

  it('delivers webhooks within moments of the commit: NOTIFY reaches the worker on its direct connection', async () => {
    const practice = await newPractice(a)
    await registerWebhook(a, practice.admin, { url: receiver.url })
    const admin = { ...practice.admin, token: tokenFor(b, practice.admin) }
    const latencies: number[] = []
    for (let i = 0; i < 5; i++) {
      const before = receiver.received.length
      const committed = Date.now()
      // Committed by the other instance, through PgBouncer.
      const patient = await createPatientAs(b, admin, patientBody())
      await receiver.waitFor(before + 1, 5000)
      const request = receiver.received[before]
      expect(JSON.parse(request?.body as string).data.id).toBe(patient.id)
      latencies.push((request?.receivedAt as number) - committed)
    }
    // The worker polls every 10 minutes: only the notification can have woken it this soon.
    expect(Math.max(...latencies)).toBeLessThan(3000)
    // A burst from both instances at once arrives in full.
    const before = receiver.received.length
    await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        createPatientAs(i % 2 ? b : a, i % 2 ? admin : practice.admin, patientBody()),
      ),
    )
    await receiver.waitFor(before + 10, 5000)
  })

  it('lets one instance at a time run housekeeping, and frees the lock when the run ends', async () => {
    const practice = await newPractice(a)
    const expired = await a.db
      .insertInto('password_reset_tokens')
      .values({
        user_id: practice.nurse.id,
        token_hash: `pgbouncer-${Date.now()}`,
        expires_at: new Date(Date.now() - 86_400_000),
        used_at: null,
      })
      .returning('id')
      .executeTakeFirstOrThrow()
    const direct = openPostgres({ url: directUrl, poolMax: 2 })
    const holders = async () =>
      (
        await sql<{ pid: number }>`
          select pid from pg_locks
          where locktype = 'advisory' and granted and classid = ${LOCK_CLASSID} and objid = ${LOCK_OBJID}`.execute(
          direct.db,
        )
      ).rows.map((row) => row.pid)
    try {
      let first: Promise<HousekeepingRun> | undefined
      // A's run takes the lock, then waits on the row locked here until this transaction ends.
      const second = await direct.db.transaction().execute(async (trx) => {
        await trx
          .selectFrom('password_reset_tokens')
          .select('id')
          .where('id', '=', expired.id)
          .forUpdate()
          .execute()
        first = a.housekeeping.runOnce()
        const deadline = Date.now() + 2000
        while ((await holders()).length === 0 && Date.now() < deadline)
          await new Promise((r) => setTimeout(r, 20))
        const [holder, ...others] = await holders()
        expect(holder).toBeDefined()
        expect(others).toEqual([])
        // Held on a session of its own: not one of the server sessions PgBouncer shares out (where
        // another instance's statement could find it already "held" by itself).
        const shared = await bouncer.serverPids()
        expect(shared.length).toBeGreaterThan(0)
        expect(shared).not.toContain(holder)
        return [await b.housekeeping.runOnce(), await b.housekeeping.runOnce()]
      })
      expect(second.map((run) => run.outcome)).toEqual(['skipped', 'skipped'])
      expect((await first)?.outcome).toBe('completed')
      const left = await a.db
        .selectFrom('password_reset_tokens')
        .select('id')
        .where('id', '=', expired.id)
        .execute()
      expect(left).toEqual([])
      expect(await holders()).toEqual([])
      expect((await b.housekeeping.runOnce()).outcome).toBe('completed')
    } finally {
      await direct.close()
    }
  })

  it('keeps the server-side statement limit of PgBouncer on the pooled connections', async () => {
    const { rows } = await sql<{ statement_timeout: string }>`show statement_timeout`.execute(a.db)
    expect(rows[0]?.statement_timeout).toBe(`${QUERY_TIMEOUT_MS / 1000}s`)
    const started = Date.now()
    // Cancelled by the server (57014), not given up by the client a second later.
    await expect(sql`select pg_sleep(${(QUERY_TIMEOUT_MS * 3) / 1000})`.execute(a.db)).rejects.toMatchObject({
      code: '57014',
    })
    expect(Date.now() - started).toBeLessThan(QUERY_TIMEOUT_MS + 900)
  })
})

describe('what the settings for PgBouncer prevent', () => {
  it('a LISTEN through PgBouncer hears nothing; the direct connection hears the NOTIFY', async () => {
    const channel = `pgbouncer_check_${Date.now()}`
    const heard = { pooled: 0, direct: 0 }
    const misconfigured = openPostgres({
      url: bouncer.urlOf(directUrl),
      directUrl: bouncer.urlOf(directUrl),
      poolMax: 1,
    })
    const configured = openPostgres({ url: bouncer.urlOf(directUrl), directUrl, poolMax: 1 })
    // Each calls back once when its LISTEN has run; any call after that is a notification heard.
    const listening = (handle: DatabaseHandle, key: keyof typeof heard) =>
      new Promise<void>((resolve) => {
        void handle.listen(channel, () => {
          heard[key] += 1
          resolve()
        })
      })
    try {
      await Promise.all([listening(misconfigured, 'pooled'), listening(configured, 'direct')])
      await sql`select pg_notify(${channel}, '')`.execute(configured.db)
      const deadline = Date.now() + 3000
      while (heard.direct < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20))
      // Half a second more for the listener behind PgBouncer, which would have heard it by now.
      await new Promise((r) => setTimeout(r, 500))
      expect(heard).toEqual({ pooled: 1, direct: 2 })
    } finally {
      await misconfigured.close()
      await configured.close()
    }
  })

  it('named prepared statements fail through PgBouncer 1.18; with DATABASE_PREPARED_STATEMENTS=0 they are not used', async () => {
    // One server connection, so that each client's statements meet the others' on it.
    const single = await startPgBouncer({ serverUrl: directUrl, poolSize: 1 })
    const attempt = async (preparedStatements: number) => {
      const handle = openPostgres({ url: single.urlOf(directUrl), poolMax: 2, preparedStatements })
      try {
        // A change, which the service prepares; it deletes nothing.
        const run = () => handle.db.deleteFrom('password_reset_tokens').where('id', '=', -1).execute()
        const results = await Promise.allSettled(Array.from({ length: 6 }, run))
        return results.flatMap((result) =>
          result.status === 'rejected' ? [(result.reason as { code?: string }).code] : [],
        )
      } finally {
        await handle.close()
      }
    }
    try {
      // 42P05: "prepared statement already exists", prepared by the other client on the same session.
      expect(await attempt(500)).toContain('42P05')
      expect(await attempt(0)).toEqual([])
    } finally {
      await single.stop()
    }
  })
})
