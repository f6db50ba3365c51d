import { createServer, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { buildTestApp } from '../../helpers/app.js'
import { newOrganization, patientBody, type TestUser } from '../../helpers/factories.js'
import { type Receiver, startReceiver } from '../../helpers/servers/webhook-receiver.js'
import { createPatientAs, registerWebhook } from '../../helpers/webhooks.js'

/** A receiver on loopback that holds every answer until `answerAll()`. */
async function startHoldingReceiver() {
  const held: ServerResponse[] = []
  let answering = false
  let received = 0
  const server = createServer((request, response) => {
    request.resume()
    request.on('end', () => {
      received += 1
      if (answering) response.writeHead(204).end()
      else held.push(response)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    received: () => received,
    answerAll() {
      answering = true
      for (const response of held.splice(0)) response.writeHead(204).end()
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}

let app: App
let slow: Awaited<ReturnType<typeof startHoldingReceiver>>
let fast: Receiver
let slowAdmin: TestUser
let claims = 0

const until = async (condition: () => boolean | Promise<boolean>, timeoutMs = 5000) => {
  const started = Date.now()
  while (!(await condition())) {
    if (Date.now() - started > timeoutMs) throw new Error('condition not met in time')
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

beforeAll(async () => {
  slow = await startHoldingReceiver()
  fast = await startReceiver()
  app = await buildTestApp({
    OUTBOX_WORKER: 'true',
    WEBHOOK_ALLOW_HTTP: 'true',
    WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
    WEBHOOK_HOST_CONCURRENCY: '8',
    // Only notifications and answers wake the worker.
    OUTBOX_POLL_INTERVAL_MS: '600000',
  })
  // Counts the worker's claims (this replaces the metrics' view of queries, which no test here reads).
  app.database.observe({
    query: (_seconds, _error, statement) => {
      if (/set "locked_by" = \$/.test(statement)) claims += 1
    },
    connectionError: () => {},
  })
  slowAdmin = await (await newOrganization(app)).user('ADMIN')
  await registerWebhook(app, slowAdmin, { url: slow.url })
})
afterAll(async () => {
  slow.answerAll()
  await app.close()
  await slow.close()
  await fast.close()
})

describe('the running outbox worker with one receiver holding every answer', () => {
  it('claims nothing more for that receiver while a whole batch waits for it, and still serves others at once', async () => {
    // 8 attempts held by the receiver, at least a whole batch (25) queued behind them.
    for (let i = 0; i < 40; i++) await createPatientAs(app, slowAdmin, patientBody())
    await until(() => slow.received() === 8)
    await new Promise((resolve) => setTimeout(resolve, 50))

    const before = claims
    for (let i = 0; i < 10; i++) await createPatientAs(app, slowAdmin, patientBody())
    await new Promise((resolve) => setTimeout(resolve, 50))
    // Each of these commits notified the worker; none of them was worth a claim.
    expect(claims - before).toBe(0)

    const otherAdmin = await (await newOrganization(app)).user('ADMIN')
    await registerWebhook(app, otherAdmin, { url: fast.url })
    await createPatientAs(app, otherAdmin, patientBody())
    await fast.waitFor(1, 3000)
    expect(claims - before).toBeGreaterThan(0)
    expect(slow.received()).toBe(8)
  })

  it('records the answers without leaving later statements to commit asynchronously', async () => {
    slow.answerAll()
    await until(async () => {
      const { rows } = await sql<{ done: number }>`
        select count(*)::int as done from webhook_deliveries
        where organization_id = ${slowAdmin.organizationId} and status = 'SUCCEEDED'`.execute(app.db)
      return rows[0]?.done === 50
    }, 10_000)
    const { rows } = await sql<{ synchronous_commit: string }>`show synchronous_commit`.execute(app.db)
    expect(rows[0]?.synchronous_commit).toBe('on')
  })
})
