import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { DatabaseHandle } from '../../db/connect.js'
import { openPostgres } from '../../db/postgres.js'
import type { App } from '../../src/app.js'
import { buildTestApp, newPostgresDatabase, TEST_ENCRYPTION_KEY } from '../helpers/app.js'
import { newOrganization, patientBody } from '../helpers/factories.js'
import { type RunningServer, startServer, stopServer } from '../helpers/servers/server-process.js'
import { type Receiver, startReceiver } from '../helpers/servers/webhook-receiver.js'
import { createPatientAs, registerWebhook } from '../helpers/webhooks.js'

let handle: DatabaseHandle
let databaseUrl: string
let app: App
let receiver: Receiver
const running: RunningServer[] = []

beforeAll(async () => {
  databaseUrl = await newPostgresDatabase()
  handle = openPostgres({ url: databaseUrl, poolMax: 10 })
  app = await buildTestApp({ WEBHOOK_ALLOW_HTTP: 'true', WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' }, undefined, {
    database: handle,
  })
  // Slow enough that deliveries are in flight whenever the process is killed.
  receiver = await startReceiver(() => ({ status: 204, delayMs: 150 }))
})
afterAll(async () => {
  for (const server of running) await stopServer(server, 'SIGKILL')
  await receiver.close()
  await app.close()
})

const instanceEnvironment = () => ({
  DATABASE_URL: databaseUrl,
  ENCRYPTION_KEY: TEST_ENCRYPTION_KEY,
  // No mail server here; on PostgreSQL the service starts without one only when told so.
  MAIL_TRANSPORT: 'log',
  MIGRATE_ON_START: 'false',
  WEBHOOK_ALLOW_HTTP: 'true',
  WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
  WEBHOOK_TIMEOUT_MS: '2000',
  // Short, so that the deliveries the killed process held come back quickly.
  WEBHOOK_LEASE_SECONDS: '5',
  WEBHOOK_HOST_CONCURRENCY: '4',
  OUTBOX_POLL_INTERVAL_MS: '200',
})

async function start(): Promise<RunningServer> {
  const server = await startServer(instanceEnvironment())
  running.push(server)
  return server
}

describe('a process killed with SIGKILL while delivering', () => {
  it('loses nothing: after a restart the receiver has every event (duplicates allowed)', async () => {
    const admin = await (await newOrganization(app)).user('ADMIN')
    await registerWebhook(app, admin, { url: receiver.url })
    const total = 30
    for (let i = 0; i < total - 5; i++) await createPatientAs(app, admin, patientBody())

    const first = await start()
    await receiver.waitFor(6, 20_000)
    await stopServer(first, 'SIGKILL')
    const deliveredBeforeKill = receiver.messageIds().size
    expect(deliveredBeforeKill).toBeLessThan(total)
    const held = await handle.db
      .selectFrom('webhook_deliveries')
      .select('id')
      .where('locked_until', 'is not', null)
      .execute()
    expect(held.length).toBeGreaterThan(0)

    // Events committed while no worker runs wait in the outbox.
    for (let i = 0; i < 5; i++) await createPatientAs(app, admin, patientBody())

    const second = await start()
    const deadline = Date.now() + 30_000
    while (receiver.messageIds().size < total && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    expect(receiver.messageIds().size).toBe(total)
    expect(await stopServer(second)).toBe(0)

    const rows = await handle.db.selectFrom('webhook_deliveries').select(['status', 'message_id']).execute()
    expect(rows).toHaveLength(total)
    expect(rows.every((row) => row.status === 'SUCCEEDED')).toBe(true)
    expect(new Set(rows.map((row) => row.message_id))).toEqual(receiver.messageIds())
    // Starts and kills real server processes (each start up to 45 s on a loaded machine).
  }, 120_000)
})

describe('graceful shutdown of the worker', () => {
  async function inFlightAtClose(delayMs: number) {
    const slow = await startReceiver(() => ({ status: 204, delayMs }))
    const worker = await buildTestApp(
      {
        ...instanceEnvironment(),
        OUTBOX_WORKER: 'true',
        WEBHOOK_TIMEOUT_MS: '10000',
        WEBHOOK_LEASE_SECONDS: '30',
      },
      undefined,
      { database: openPostgres({ url: databaseUrl, poolMax: 4 }) },
    )
    try {
      const admin = await (await newOrganization(worker)).user('ADMIN')
      const webhook = await registerWebhook(worker, admin, { url: slow.url })
      await createPatientAs(worker, admin, patientBody())
      await slow.waitFor(1, 5000)
      const started = Date.now()
      await worker.close()
      const row = await handle.db
        .selectFrom('webhook_deliveries')
        .select(['status', 'attempt_count', 'locked_until'])
        .where('webhook_id', '=', webhook.id)
        .executeTakeFirstOrThrow()
      return { row, closedAfterMs: Date.now() - started }
    } finally {
      await slow.close()
    }
  }

  it('lets an attempt in flight finish and records it', async () => {
    const { row, closedAfterMs } = await inFlightAtClose(800)
    expect(row).toEqual({ status: 'SUCCEEDED', attempt_count: 1, locked_until: null })
    expect(closedAfterMs).toBeGreaterThanOrEqual(500)
  })

  it('hands an attempt that outlasts the grace period back as pending, not counted', async () => {
    const { row, closedAfterMs } = await inFlightAtClose(8000)
    expect(row).toEqual({ status: 'PENDING', attempt_count: 0, locked_until: null })
    expect(closedAfterMs).toBeLessThan(7500)
    // The attempt lasts 8 s by design; the bound leaves room for the grace period and start-up.
  }, 30_000)
})
