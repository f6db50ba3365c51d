import { Webhook } from 'standardwebhooks'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { transactionWithEvents } from '../../../src/outbox/doorbell.js'
import { enqueueEvent } from '../../../src/outbox/enqueue.js'
import { buildTestApp } from '../../helpers/app.js'
import { bearer, newOrganization, patientBody, type TestUser } from '../../helpers/factories.js'
import { type Receiver, type Reply, startReceiver } from '../../helpers/servers/webhook-receiver.js'
import { createPatientAs, registerWebhook } from '../../helpers/webhooks.js'

let app: App
let receiver: Receiver
// Each test registers its own path on the shared receiver, and may choose that path's answers.
const answers = new Map<string, (index: number) => Reply>()

beforeAll(async () => {
  app = await buildTestApp({
    WEBHOOK_ALLOW_HTTP: 'true',
    WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
    // Retries due at once, so one drainOnce() runs a whole schedule: three attempts in all.
    WEBHOOK_RETRY_SCHEDULE: '0,0',
    WEBHOOK_TIMEOUT_MS: '1000',
    WEBHOOK_CONCURRENCY: '4',
    WEBHOOK_HOST_CONCURRENCY: '2',
  })
  const counts = new Map<string, number>()
  receiver = await startReceiver((request) => {
    const index = counts.get(request.path) ?? 0
    counts.set(request.path, index + 1)
    return answers.get(request.path)?.(index) ?? { status: 204 }
  })
})
afterAll(async () => {
  await receiver.close()
  await app.close()
})

let pathCounter = 0

/** An organization with an administrator and a webhook at a path of its own on the receiver. */
async function setup(
  options: { events?: string[]; secret?: string; answer?: (index: number) => Reply; url?: string } = {},
) {
  const org = await newOrganization(app)
  const admin = await org.user('ADMIN')
  pathCounter += 1
  const path = `/hooks/${pathCounter}`
  if (options.answer) answers.set(path, options.answer)
  const url = options.url ?? `http://127.0.0.1:${receiver.port}${path}`
  const webhook = await registerWebhook(app, admin, { url, events: options.events, secret: options.secret })
  const requests = () => receiver.received.filter((request) => request.path === path)
  return { org, admin, webhook, path, requests }
}

async function deliveriesOf(admin: TestUser, webhookId: number) {
  const response = await app.inject({
    url: `/api/webhooks/${webhookId}/deliveries`,
    headers: bearer(admin.token),
  })
  expect(response.statusCode).toBe(200)
  return response.json().data.content as Array<Record<string, unknown>>
}

async function deliveryDetail(admin: TestUser, webhookId: number, deliveryId: number) {
  const response = await app.inject({
    url: `/api/webhooks/${webhookId}/deliveries/${deliveryId}`,
    headers: bearer(admin.token),
  })
  expect(response.statusCode).toBe(200)
  return response.json().data
}

const headersOf = (request: { headers: object } | undefined) => request?.headers as Record<string, string>

describe('delivery', () => {
  it('POSTs exactly {event, timestamp, data}, signed so that the standardwebhooks package verifies it', async () => {
    const { admin, webhook, requests } = await setup({ events: ['patient.created'] })
    const patient = await createPatientAs(app, admin, patientBody())

    expect(await app.outbox.drainOnce()).toBe(1)

    const [request] = requests()
    const verified = new Webhook(webhook.secret as string).verify(request?.body as string, headersOf(request))
    expect(verified).toEqual({
      event: 'patient.created',
      timestamp: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/),
      data: { id: patient.id, mrn: patient.mrn, status: 'ACTIVE', version: 1, deleted: false },
    })
    expect(Object.keys(JSON.parse(request?.body as string))).toEqual(['event', 'timestamp', 'data'])
    expect(headersOf(request)['content-type']).toBe('application/json')
    expect(Math.abs(Number(headersOf(request)['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(10)
    const [delivery] = await deliveriesOf(admin, webhook.id)
    expect(delivery).toMatchObject({
      messageId: headersOf(request)['webhook-id'],
      event: 'patient.created',
      status: 'SUCCEEDED',
      attemptCount: 1,
      lastStatusCode: 204,
      lastError: null,
      nextAttemptAt: null,
    })
  })

  it('signs with the UTF-8 bytes of a secret that is not in whsec_ form', async () => {
    const secret = 'a plain shared secret of some length'
    const { admin, requests } = await setup({ secret })
    await createPatientAs(app, admin, patientBody())
    await app.outbox.drainOnce()
    const [request] = requests()
    const receiverSide = new Webhook(Buffer.from(secret, 'utf8'), { format: 'raw' })
    expect(receiverSide.verify(request?.body as string, headersOf(request))).toMatchObject({
      event: 'patient.created',
    })
  })

  it('sends only the subscribed events, and patient.updated for an update and a deletion', async () => {
    const { admin, requests } = await setup({ events: ['patient.updated'] })
    const patient = await createPatientAs(app, admin, patientBody())
    const body = patientBody()
    await app.inject({
      method: 'PUT',
      url: `/api/patients/${patient.id}`,
      headers: bearer(admin.token),
      payload: body,
    })
    await app.inject({ method: 'DELETE', url: `/api/patients/${patient.id}`, headers: bearer(admin.token) })
    await app.outbox.drainOnce()
    const events = requests().map((request) => JSON.parse(request.body))
    expect(events.map((event) => [event.event, event.data.deleted])).toEqual(
      expect.arrayContaining([
        ['patient.updated', false],
        ['patient.updated', true],
      ]),
    )
    expect(events).toHaveLength(2)
  })

  it('never delivers another organization’s events', async () => {
    const { requests } = await setup()
    const other = await (await newOrganization(app)).user('ADMIN')
    await createPatientAs(app, other, patientBody())
    await app.outbox.drainOnce()
    expect(requests()).toHaveLength(0)
  })

  it('sends nothing for an event whose transaction rolled back', async () => {
    const { org, admin, webhook, requests } = await setup()
    await expect(
      transactionWithEvents(app.db, async (trx) => {
        await enqueueEvent(trx, org.id, 'patient.created', {
          id: 1,
          mrn: 'ROLLED-BACK',
          status: 'ACTIVE',
          version: 1,
          deleted: false,
        })
        throw new Error('the change failed after its event was written')
      }),
    ).rejects.toThrow('the change failed')
    expect(await app.outbox.drainOnce()).toBe(0)
    expect(requests()).toHaveLength(0)
    expect(await deliveriesOf(admin, webhook.id)).toEqual([])
  })

  it('retries a failing receiver with the same webhook-id until it answers 2xx, recording every attempt', async () => {
    const { admin, webhook, requests } = await setup({
      answer: (index) => (index < 2 ? { status: 500 } : { status: 200, body: 'ok' }),
    })
    await createPatientAs(app, admin, patientBody())

    expect(await app.outbox.drainOnce()).toBe(3)

    expect(requests()).toHaveLength(3)
    expect(new Set(requests().map((request) => headersOf(request)['webhook-id'])).size).toBe(1)
    for (const request of requests()) {
      expect(() =>
        new Webhook(webhook.secret as string).verify(request.body, headersOf(request)),
      ).not.toThrow()
    }
    const [delivery] = await deliveriesOf(admin, webhook.id)
    expect(delivery).toMatchObject({ status: 'SUCCEEDED', attemptCount: 3, lastStatusCode: 200 })
    const detail = await deliveryDetail(admin, webhook.id, delivery?.id as number)
    expect(detail.attempts.map((attempt: { statusCode: number }) => attempt.statusCode)).toEqual([
      500, 500, 200,
    ])
    expect(detail.attempts[0].error).toBe('HTTP 500')
    expect(detail.payload.event).toBe('patient.created')
    // The streak starting and ending are changes of the webhook; the second failure alone is not.
    const current = await app.inject({ url: `/api/webhooks/${webhook.id}`, headers: bearer(admin.token) })
    expect(current.json().data).toMatchObject({ version: 3, failingSince: null })
  })

  it('marks a delivery FAILED when the schedule runs out, and redelivers it on request', async () => {
    let healthy = false
    const { admin, webhook, requests } = await setup({
      answer: () => (healthy ? { status: 204 } : { status: 503 }),
    })
    await createPatientAs(app, admin, patientBody())
    await app.outbox.drainOnce()
    const [failed] = await deliveriesOf(admin, webhook.id)
    expect(failed).toMatchObject({
      status: 'FAILED',
      attemptCount: 3,
      lastStatusCode: 503,
      lastError: 'HTTP 503',
      nextAttemptAt: null,
    })
    expect(failed?.completedAt).toEqual(expect.any(String))

    healthy = true
    const redelivered = await app.inject({
      method: 'POST',
      url: `/api/webhooks/${webhook.id}/deliveries/${failed?.id}/redeliver`,
      headers: bearer(admin.token),
    })
    expect(redelivered.statusCode).toBe(200)
    expect(redelivered.json().data).toMatchObject({ status: 'PENDING', attemptCount: 3, completedAt: null })
    await app.outbox.drainOnce()
    const [delivered] = await deliveriesOf(admin, webhook.id)
    expect(delivered).toMatchObject({ status: 'SUCCEEDED', attemptCount: 4, lastStatusCode: 204 })
    expect(new Set(requests().map((request) => headersOf(request)['webhook-id'])).size).toBe(1)
  })

  it('does not follow a redirect: a 3xx is a failed attempt', async () => {
    const { admin, webhook, requests } = await setup({
      answer: () => ({ status: 302, headers: { location: `http://127.0.0.1:${receiver.port}/elsewhere` } }),
    })
    await createPatientAs(app, admin, patientBody())
    await app.outbox.drainOnce()
    expect(requests()).toHaveLength(3)
    expect(receiver.received.filter((request) => request.path === '/elsewhere')).toHaveLength(0)
    const [delivery] = await deliveriesOf(admin, webhook.id)
    expect(delivery).toMatchObject({ status: 'FAILED', lastError: 'HTTP 302' })
  })

  it('gives up on a receiver slower than the timeout, and accepts a long answer without reading it all', async () => {
    const slow = await setup({ answer: () => ({ status: 200, delayMs: 1500 }) })
    const chatty = await setup({ answer: () => ({ status: 200, body: 'x'.repeat(1024 * 1024) }) })
    await createPatientAs(app, slow.admin, patientBody())
    await createPatientAs(app, chatty.admin, patientBody())
    await app.outbox.drainOnce()
    const [timedOut] = await deliveriesOf(slow.admin, slow.webhook.id)
    expect(timedOut).toMatchObject({ status: 'FAILED', lastError: 'timeout', lastStatusCode: null })
    expect(timedOut?.lastLatencyMs as number).toBeGreaterThanOrEqual(900)
    const [answered] = await deliveriesOf(chatty.admin, chatty.webhook.id)
    expect(answered).toMatchObject({ status: 'SUCCEEDED', lastStatusCode: 200 })
  })

  it('records a refused connection as the error', async () => {
    const { admin, webhook } = await setup({ url: 'http://127.0.0.1:9/closed-port' })
    await createPatientAs(app, admin, patientBody())
    await app.outbox.drainOnce()
    const [delivery] = await deliveriesOf(admin, webhook.id)
    expect(delivery).toMatchObject({
      status: 'FAILED',
      lastError: 'connection refused',
      lastStatusCode: null,
    })
  })

  it('keeps a slow receiver to its share of the slots, so another host is served meanwhile', async () => {
    const slow = await setup({ answer: () => ({ status: 204, delayMs: 300 }) })
    const fast = await startReceiver()
    try {
      const other = await setup({ url: fast.url })
      for (let i = 0; i < 6; i++) await createPatientAs(app, slow.admin, patientBody())
      await createPatientAs(app, other.admin, patientBody())
      await app.outbox.drainOnce()

      expect(slow.requests()).toHaveLength(6)
      expect(fast.received).toHaveLength(1)
      const arrivals = slow
        .requests()
        .map((request) => request.receivedAt)
        .sort((a, b) => a - b)
      // Two at a time: the third request arrives only after the first two answered.
      expect(arrivals[2] as number).toBeGreaterThanOrEqual((arrivals[0] as number) + 250)
      // The other host is not queued behind them: it is served before the slow host's third round
      // (measured against the slow host's own arrivals, so a loaded machine does not decide it).
      expect(fast.received[0]?.receivedAt as number).toBeLessThan(arrivals[4] as number)
    } finally {
      await fast.close()
    }
  })
})

describe('secret rotation', () => {
  it('signs with the new and the previous secret during the overlap; either verifies', async () => {
    const { admin, webhook, requests } = await setup()
    const rotated = await app.inject({
      method: 'POST',
      url: `/api/webhooks/${webhook.id}/rotate-secret`,
      headers: bearer(admin.token),
      payload: {},
    })
    expect(rotated.statusCode).toBe(200)
    const newSecret = rotated.json().data.secret as string
    expect(newSecret).toMatch(/^whsec_/)
    expect(newSecret).not.toBe(webhook.secret)
    expect(rotated.json().data.previousSecretExpiresAt).toEqual(expect.any(String))

    await createPatientAs(app, admin, patientBody())
    await app.outbox.drainOnce()
    const [request] = requests()
    expect(headersOf(request)['webhook-signature']).toMatch(/^v1,\S+ v1,\S+$/)
    for (const secret of [newSecret, webhook.secret as string]) {
      expect(new Webhook(secret).verify(request?.body as string, headersOf(request))).toMatchObject({
        event: 'patient.created',
      })
    }
  })
})

describe('webhooks that keep failing', () => {
  it('are deactivated once every attempt has failed for the configured period, visibly', async () => {
    const { admin, webhook } = await setup({ answer: () => ({ status: 500 }) })
    await createPatientAs(app, admin, patientBody())
    await app.outbox.drainOnce()
    const failing = await app.inject({ url: `/api/webhooks/${webhook.id}`, headers: bearer(admin.token) })
    expect(failing.json().data).toMatchObject({ active: true, failingSince: expect.any(String) })

    // Five days later (the default period), still nothing but failures.
    await app.db
      .updateTable('webhooks')
      .set({ failing_since: new Date(Date.now() - 5 * 86_400_000 - 1000) })
      .where('id', '=', webhook.id)
      .execute()
    await createPatientAs(app, admin, patientBody())
    await app.outbox.drainOnce()

    const record = (
      await app.inject({ url: `/api/webhooks/${webhook.id}`, headers: bearer(admin.token) })
    ).json().data
    expect(record).toMatchObject({
      active: false,
      deactivationReason: 'FAILING',
      deactivatedAt: expect.any(String),
    })
  })

  it('hold their pending deliveries while inactive and send them once reactivated', async () => {
    const { admin, webhook, requests } = await setup()
    const update = (active: boolean) =>
      app.inject({
        method: 'PUT',
        url: `/api/webhooks/${webhook.id}`,
        headers: bearer(admin.token),
        payload: { url: webhook.url, events: ['*'], active },
      })
    await createPatientAs(app, admin, patientBody())
    const paused = await update(false)
    expect(paused.json().data).toMatchObject({ active: false, deactivationReason: 'MANUAL' })
    await createPatientAs(app, admin, patientBody())
    expect(await app.outbox.drainOnce()).toBe(0)
    expect(requests()).toHaveLength(0)

    const resumed = await update(true)
    expect(resumed.json().data).toMatchObject({ active: true, deactivationReason: null, deactivatedAt: null })
    await app.outbox.drainOnce()
    // The event from before the pause waited; none was created while inactive.
    expect(requests()).toHaveLength(1)
  })
})

describe('POST /api/webhooks/{id}/test', () => {
  it('returns 201 with a pending delivery of webhook.test, which reaches that webhook only', async () => {
    const { admin, webhook, requests } = await setup()
    const bystander = await registerWebhook(app, admin, {
      url: `http://127.0.0.1:${receiver.port}/bystander`,
    })
    const response = await app.inject({
      method: 'POST',
      url: `/api/webhooks/${webhook.id}/test`,
      headers: bearer(admin.token),
    })
    expect(response.statusCode).toBe(201)
    expect(response.json().data).toMatchObject({ event: 'webhook.test', status: 'PENDING', attemptCount: 0 })
    await app.outbox.drainOnce()
    const [request] = requests()
    expect(
      new Webhook(webhook.secret as string).verify(request?.body as string, headersOf(request)),
    ).toMatchObject({
      event: 'webhook.test',
      data: { webhookId: webhook.id },
    })
    expect(await deliveriesOf(admin, bystander.id)).toEqual([])
  })
})

describe('GET /actuator/prometheus', () => {
  it('counts deliveries by event and outcome, times attempts and reports the backlog', async () => {
    const { admin } = await setup()
    await createPatientAs(app, admin, patientBody())
    const waiting = (await app.inject({ url: '/actuator/prometheus' })).body
    expect(waiting).toMatch(/ehr_outbox_backlog [1-9]\d*/)
    expect(waiting).toMatch(/ehr_outbox_oldest_pending_age_seconds \d/)
    await app.outbox.drainOnce()
    const text = (await app.inject({ url: '/actuator/prometheus' })).body
    expect(text).toMatch(/ehr_webhook_deliveries_total\{event="patient.created",outcome="succeeded"\} [1-9]/)
    expect(text).toMatch(/ehr_webhook_deliveries_total\{event="patient.created",outcome="retrying"\} [1-9]/)
    expect(text).toMatch(/ehr_webhook_attempt_duration_seconds_bucket\{le="0.1",outcome="succeeded"\} [1-9]/)
    expect(text).toMatch(/ehr_outbox_backlog 0/)
    expect(text).toMatch(/ehr_outbox_oldest_pending_age_seconds 0/)
  })
})

describe('GET /api/webhooks/{id}/deliveries with updatedSince and cursor', () => {
  it('returns deliveries in order of their last change, and again when they change', async () => {
    let healthy = false
    const { admin, webhook } = await setup({ answer: () => (healthy ? { status: 204 } : { status: 503 }) })
    const start = new Date(Date.now() - 60_000).toISOString()
    await createPatientAs(app, admin, patientBody())
    await createPatientAs(app, admin, patientBody())
    const page = async (query: string) => {
      const response = await app.inject({
        url: `/api/webhooks/${webhook.id}/deliveries?${query}`,
        headers: bearer(admin.token),
      })
      expect(response.statusCode).toBe(200)
      return response.json().data
    }
    const first = await page(`updatedSince=${encodeURIComponent(start)}&size=1`)
    expect(first.content).toHaveLength(1)
    expect(first.last).toBe(false)
    const second = await page(`cursor=${first.nextCursor}&size=1`)
    expect(second.content).toHaveLength(1)
    expect(second.last).toBe(true)
    const pending = [first.content[0].id, second.content[0].id]
    expect(new Set(pending).size).toBe(2)

    // Both fail until the schedule runs out: each is read again from the last cursor, as FAILED.
    await app.outbox.drainOnce()
    const changed = await page(`cursor=${second.nextCursor}`)
    expect(changed.content.map((delivery: { id: number }) => delivery.id).sort()).toEqual([...pending].sort())
    expect(changed.content.every((delivery: { status: string }) => delivery.status === 'FAILED')).toBe(true)
    const idle = await page(`cursor=${changed.nextCursor}`)
    expect(idle).toMatchObject({ content: [], last: true })

    healthy = true
    const redelivered = await app.inject({
      method: 'POST',
      url: `/api/webhooks/${webhook.id}/deliveries/${pending[0]}/redeliver`,
      headers: bearer(admin.token),
    })
    expect(redelivered.statusCode).toBe(200)
    const afterRedelivery = await page(`cursor=${idle.nextCursor}`)
    expect(afterRedelivery.content.map((delivery: { id: number }) => delivery.id)).toEqual([pending[0]])
  })
})
