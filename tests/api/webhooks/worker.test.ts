import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { CreatePatientBody } from '../../../schemas/patients.js'
import type { App } from '../../../src/app.js'
import { createPatient } from '../../../src/modules/patients/service.js'
import { transactionWithEvents } from '../../../src/outbox/doorbell.js'
import { enqueueEvent } from '../../../src/outbox/enqueue.js'
import { buildTestApp } from '../../helpers/app.js'
import { newOrganization, patientBody } from '../../helpers/factories.js'
import { type Receiver, startReceiver } from '../../helpers/servers/webhook-receiver.js'
import { createPatientAs, registerWebhook } from '../../helpers/webhooks.js'

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
    // Practically no polling: only the writers (new events) and the retry timer can wake the worker.
    OUTBOX_POLL_INTERVAL_MS: '600000',
  })
})
afterAll(async () => {
  await app.close()
  await receiver.close()
})

describe('the running outbox worker', () => {
  it('delivers within milliseconds of the commit, woken by the writer', async () => {
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
    // Nothing but the writer's announcement woke the worker; typically a few milliseconds.
    expect(Math.max(...latencies)).toBeLessThan(3000)
  })

  it('delivers an event recorded in a transaction once the transaction commits, not before', async () => {
    const organization = await newOrganization(app)
    const admin = await organization.user('ADMIN')
    await registerWebhook(app, admin, { url: receiver.url })
    const before = receiver.received.length
    const event = { id: 1, mrn: 'IN-A-TRANSACTION', status: 'ACTIVE', version: 1, deleted: false } as const
    let committing = 0
    await transactionWithEvents(app.db, async (trx) => {
      await enqueueEvent(trx, organization.id, 'patient.created', event)
      // Long enough for a worker woken now to have claimed; it could find nothing uncommitted.
      await new Promise((resolve) => setTimeout(resolve, 300))
      expect(receiver.received).toHaveLength(before)
      committing = Date.now()
    })
    await receiver.waitFor(before + 1, 5000)
    const request = receiver.received[before]
    expect(JSON.parse(request?.body as string).data).toEqual(event)
    expect((request?.receivedAt as number) - committing).toBeLessThan(3000)
  })

  it('refuses an event recorded in a plain transaction that a function took for the database', async () => {
    const organization = await newOrganization(app)
    const admin = await organization.user('ADMIN')
    await registerWebhook(app, admin, { url: receiver.url })
    const body = patientBody({ mrn: 'UNANNOUNCED' }) as CreatePatientBody
    // createPatient takes the database; a transaction passes for one (Transaction extends Kysely),
    // so only the run-time check stands between its event and a commit that announces nothing.
    const recorded = app.db
      .transaction()
      .execute((trx) => createPatient(trx, { organizationId: organization.id, userId: admin.id }, body))
    await expect(recorded).rejects.toThrow('transactionWithEvents')
    const events = await app.db
      .selectFrom('outbox_events')
      .select('id')
      .where('organization_id', '=', organization.id)
      .execute()
    expect(events).toEqual([])
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
