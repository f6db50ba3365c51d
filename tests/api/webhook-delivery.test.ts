import { Webhook } from 'standardwebhooks'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../src/app.js'
import { buildTestApp } from '../helpers/app.js'
import { bearer, newOrganization, patientBody } from '../helpers/factories.js'
import { type Receiver, startReceiver } from '../helpers/webhook-receiver.js'
import { createPatientAs, registerWebhook } from '../helpers/webhooks.js'

let app: App
let receiver: Receiver

beforeAll(async () => {
  app = await buildTestApp({
    WEBHOOK_ALLOW_HTTP: 'true',
    WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
    // Retries due at once, so one drainOnce() runs a whole schedule: three attempts in all.
    WEBHOOK_RETRY_SCHEDULE: '0,0',
    WEBHOOK_TIMEOUT_MS: '1000',
  })
  receiver = await startReceiver()
})
afterAll(async () => {
  await receiver.close()
  await app.close()
})

describe('delivery of patient.created', () => {
  it('POSTs the spec payload signed per Standard Webhooks, verified by the standardwebhooks package', async () => {
    const org = await newOrganization(app)
    const admin = await org.user('ADMIN')
    const webhook = await registerWebhook(app, admin, { url: receiver.url, events: ['patient.created'] })
    const patient = await createPatientAs(app, admin, patientBody())
    const before = receiver.received.length

    expect(await app.outbox.drainOnce()).toBe(1)

    const request = receiver.received[before]
    expect(request).toBeDefined()
    const headers = request?.headers as Record<string, string>
    const verified = new Webhook(webhook.secret as string).verify(request?.body as string, headers)
    expect(verified).toEqual({
      event: 'patient.created',
      timestamp: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/),
      data: { id: patient.id, mrn: patient.mrn, status: 'ACTIVE', deleted: false },
    })
    expect(Object.keys(JSON.parse(request?.body as string))).toEqual(['event', 'timestamp', 'data'])
    expect(headers['content-type']).toBe('application/json')
    expect(Number(headers['webhook-timestamp'])).toBeCloseTo(Date.now() / 1000, -1)
  })
})
