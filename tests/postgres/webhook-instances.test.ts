import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openPostgres } from '../../db/postgres.js'
import type { App } from '../../src/app.js'
import { buildTestApp, newPostgresDatabase } from '../helpers/app.js'
import { newOrganization, patientBody } from '../helpers/factories.js'
import { type Receiver, startReceiver } from '../helpers/servers/webhook-receiver.js'
import { createPatientAs, registerWebhook } from '../helpers/webhooks.js'

const workerEnvironment = {
  OUTBOX_WORKER: 'true',
  WEBHOOK_ALLOW_HTTP: 'true',
  WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
  WEBHOOK_HOST_CONCURRENCY: '4',
}

let url: string
let first: App
let second: App
let receiver: Receiver

beforeAll(async () => {
  url = await newPostgresDatabase()
  receiver = await startReceiver(() => ({ status: 204, delayMs: 20 }))
  first = await buildTestApp(workerEnvironment, undefined, {
    database: openPostgres({ url, poolMax: 10 }),
  })
  second = await buildTestApp(workerEnvironment, undefined, {
    database: openPostgres({ url, poolMax: 10 }),
  })
})
afterAll(async () => {
  await second.close()
  await first.close()
  await receiver.close()
})

describe('two instances delivering from one database', () => {
  it('deliver every event exactly once between them, both taking part', async () => {
    const admin = await (await newOrganization(first)).user('ADMIN')
    await registerWebhook(first, admin, { url: receiver.url })
    const total = 200
    for (let batch = 0; batch < total / 20; batch++) {
      const app = batch % 2 === 0 ? first : second
      await Promise.all(Array.from({ length: 20 }, () => createPatientAs(app, admin, patientBody())))
    }
    await receiver.waitFor(total, 30_000)
    // Every delivery recorded as succeeded: no attempt is left that could still send a duplicate.
    await expect
      .poll(
        async () =>
          (await first.db.selectFrom('webhook_deliveries').select('status').execute()).every(
            (row) => row.status === 'SUCCEEDED',
          ),
        { timeout: 30_000, interval: 50 },
      )
      .toBe(true)

    expect(receiver.received).toHaveLength(total)
    expect(receiver.messageIds().size).toBe(total)
    const instances = await first.db
      .selectFrom('webhook_delivery_attempts')
      .select('instance_id')
      .distinct()
      .execute()
    expect(instances).toHaveLength(2)
    // 200 deliveries at 20 ms each through two workers, on a loaded machine.
  }, 60_000)
})
