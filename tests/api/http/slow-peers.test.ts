import { connect, type Socket } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { buildTestApp } from '../../helpers/app.js'
import { createPatient, newOrganization, type TestUser } from '../../helpers/factories.js'
import { type Receiver, startReceiver } from '../../helpers/servers/webhook-receiver.js'
import { registerWebhook } from '../../helpers/webhooks.js'

// The receiver answers long after the service gives up on an attempt.
const RECEIVER_DELAY_MS = 10_000
const WEBHOOK_TIMEOUT_MS = 4000
// Far below what waiting on anything slow would cost, and generous on a busy machine.
const ORDINARY_BOUND_MS = 3000

let app: App
let base: string
let receiver: Receiver
let admin: TestUser
let patientId: number

beforeAll(async () => {
  receiver = await startReceiver(() => ({ status: 204, delayMs: RECEIVER_DELAY_MS }))
  app = await buildTestApp({
    OUTBOX_WORKER: 'true',
    WEBHOOK_ALLOW_HTTP: 'true',
    WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
    WEBHOOK_TIMEOUT_MS: String(WEBHOOK_TIMEOUT_MS),
    WEBHOOK_RETRY_SCHEDULE: '600',
  })
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
    const webhook = await registerWebhook(app, admin, { url: receiver.url })
    for (let i = 0; i < 4; i++) await createPatient(app, admin)
    await receiver.waitFor(4, 5000)

    expect(await ordinaryReads()).toBeLessThan(ORDINARY_BOUND_MS)
    // Answered while every attempt was still waiting for the receiver: none has ended yet.
    const ended = await app.db
      .selectFrom('webhook_deliveries')
      .select('id')
      .where('webhook_id', '=', webhook.id)
      .where('attempt_count', '>', 0)
      .execute()
    expect(ended).toEqual([])
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

      expect(await ordinaryReads()).toBeLessThan(ORDINARY_BOUND_MS)
      // The slow ones are still waiting for their own bytes, unanswered.
      expect(answered).toEqual([])
      expect(sockets.every((socket) => !socket.destroyed)).toBe(true)
    } finally {
      for (const socket of sockets) socket.destroy()
    }
  })
})

describe('requests the HTTP parser rejects', () => {
  /** Sends raw bytes and collects everything until the service closes the connection. */
  const exchange = (bytes: string) =>
    new Promise<string>((resolve, reject) => {
      const chunks: Buffer[] = []
      const socket = connect(Number(new URL(base).port), '127.0.0.1', () => socket.write(bytes))
      socket.setTimeout(5000, () => reject(new Error('the connection stayed open')))
      socket.on('data', (chunk) => chunks.push(chunk))
      socket.on('error', reject)
      socket.on('close', () => resolve(Buffer.concat(chunks).toString()))
    })
  const bodyOf = (answer: string) => JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4))

  it('get the error envelope and a closed connection: 400 when malformed, 431 for oversized headers', async () => {
    const malformed = await exchange(
      `GET /api/patients HTTP/1.1\r\nHost 127.0.0.1\r\nX: ${admin.token}\r\n\r\n`,
    )
    expect(malformed).toMatch(/^HTTP\/1\.1 400 /)
    expect(bodyOf(malformed)).toEqual({
      success: false,
      message: 'Invalid request',
      error: { code: 'VAL_001', details: 'The HTTP request is malformed' },
    })

    const oversized = await exchange(
      `GET /api/patients HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
    )
    expect(oversized).toMatch(/^HTTP\/1\.1 431 /)
    expect(bodyOf(oversized).error.code).toBe('VAL_001')
  })
})
