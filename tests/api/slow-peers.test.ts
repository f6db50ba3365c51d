import { connect, type Socket } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../src/app.js'
import { buildTestApp, openOwnTestDatabase } from '../helpers/app.js'
import { createPatient, newOrganization, type TestUser } from '../helpers/factories.js'
import { type Receiver, startReceiver } from '../helpers/webhook-receiver.js'
import { registerWebhook } from '../helpers/webhooks.js'

// The receiver answers long after the service gives up on an attempt.
const RECEIVER_DELAY_MS = 5000
const WEBHOOK_TIMEOUT_MS = 2000

let app: App
let base: string
let receiver: Receiver
let admin: TestUser
let patientId: number

beforeAll(async () => {
  receiver = await startReceiver(() => ({ status: 204, delayMs: RECEIVER_DELAY_MS }))
  app = await buildTestApp(
    {
      OUTBOX_WORKER: 'true',
      WEBHOOK_ALLOW_HTTP: 'true',
      WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
      WEBHOOK_TIMEOUT_MS: String(WEBHOOK_TIMEOUT_MS),
      WEBHOOK_RETRY_SCHEDULE: '600',
    },
    undefined,
    { database: (await openOwnTestDatabase()).handle },
  )
  base = await app.listen({ port: 0, host: '127.0.0.1' })
  admin = await (await newOrganization(app)).user('ADMIN', 'PROVIDER')
  patientId = await createPatient(app, admin)
})
afterAll(async () => {
  await app.close()
  await receiver.close()
})

/** Twenty ordinary reads over real connections; returns how long the slowest took. */
async function ordinaryReads(): Promise<number> {
  const startedAt = Date.now()
  const responses = await Promise.all(
    Array.from({ length: 20 }, () =>
      fetch(`${base}/api/patients/${patientId}`, { headers: { authorization: `Bearer ${admin.token}` } }),
    ),
  )
  for (const response of responses) {
    expect(response.status).toBe(200)
    expect(((await response.json()) as { data: { id: number } }).data.id).toBe(patientId)
  }
  return Date.now() - startedAt
}

describe('a slow webhook receiver', () => {
  it('does not hold up API requests while deliveries to it are in flight', async () => {
    await registerWebhook(app, admin, { url: receiver.url })
    for (let i = 0; i < 4; i++) await createPatient(app, admin)
    await receiver.waitFor(4, 5000)
    const inFlightSince = Date.now()

    const slowest = await ordinaryReads()
    // Answered while every attempt was still waiting for the receiver.
    expect(Date.now() - inFlightSince).toBeLessThan(WEBHOOK_TIMEOUT_MS)
    expect(slowest).toBeLessThan(1500)
  })
})

describe('slow clients', () => {
  it('do not hold up other requests while they trickle their headers and bodies', async () => {
    const sockets: Socket[] = []
    const answered: string[] = []
    const open = (text: string) =>
      new Promise<void>((resolve, reject) => {
        const socket = connect(Number(new URL(base).port), '127.0.0.1', () => {
          socket.write(text)
          resolve()
        })
        socket.on('error', reject)
        socket.on('data', (chunk) => answered.push(chunk.toString()))
        sockets.push(socket)
      })
    try {
      for (let i = 0; i < 10; i++) {
        // Authenticated, so the request passes the guard and waits for its body.
        await open(
          `POST /api/patients HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${admin.token}\r\n` +
            'Content-Type: application/json\r\nContent-Length: 4000\r\n\r\n{"identification": {',
        )
        await open('GET /api/patients HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthoriz')
      }
      await new Promise((resolve) => setTimeout(resolve, 100))

      expect(await ordinaryReads()).toBeLessThan(1500)
      // The slow ones are still waiting for their own bytes, unanswered.
      expect(answered).toEqual([])
      expect(sockets.every((socket) => !socket.destroyed)).toBe(true)
    } finally {
      for (const socket of sockets) socket.destroy()
    }
  })
})
