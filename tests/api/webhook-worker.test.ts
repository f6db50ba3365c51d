import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../src/app.js'
import { buildTestApp } from '../helpers/app.js'
import { newOrganization, patientBody } from '../helpers/factories.js'
import { type Receiver, startReceiver } from '../helpers/webhook-receiver.js'
import { createPatientAs, registerWebhook } from '../helpers/webhooks.js'

let app: App
let receiver: Receiver
let failNext = 0

beforeAll(async () => {
  receiver = await startReceiver(() => {
    if (failNext > 0) {
      failNext -= 1
      return { status: 500 }
    }
    return { status: 204 }
  })
  app = await buildTestApp({
    OUTBOX_WORKER: 'true',
    WEBHOOK_ALLOW_HTTP: 'true',
    WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
    WEBHOOK_RETRY_SCHEDULE: '0.3',
    // Practically no polling: only NOTIFY (new events) and the retry timer can wake the worker.
    OUTBOX_POLL_INTERVAL_MS: '600000',
  })
})
afterAll(async () => {
  await app.close()
  await receiver.close()
})

describe('the running outbox worker', () => {
  it('delivers within milliseconds of the commit, woken by NOTIFY', async () => {
    const admin = await (await newOrganization(app)).user('ADMIN')
    await registerWebhook(app, admin, { url: receiver.url })
    const latencies: number[] = []
    for (let i = 0; i < 5; i++) {
      const before = receiver.received.length
      const committed = Date.now()
      const patient = await createPatientAs(app, admin, patientBody())
      await receiver.waitFor(before + 1, 5000)
      const request = receiver.received[before]
      expect(JSON.parse(request?.body as string).data.id).toBe(patient.id)
      latencies.push((request?.receivedAt as number) - committed)
    }
    // Nothing but the commit's notification woke the worker; typically a few milliseconds.
    expect(Math.max(...latencies)).toBeLessThan(3000)
  })

  it('retries when the retry falls due, on its own timer', async () => {
    const admin = await (await newOrganization(app)).user('ADMIN')
    await registerWebhook(app, admin, { url: receiver.url })
    const before = receiver.received.length
    failNext = 1
    await createPatientAs(app, admin, patientBody())
    await receiver.waitFor(before + 2, 5000)
    const [first, second] = receiver.received.slice(before)
    expect(second?.headers['webhook-id']).toBe(first?.headers['webhook-id'])
    expect((second?.receivedAt as number) - (first?.receivedAt as number)).toBeGreaterThanOrEqual(200)
  })
})
