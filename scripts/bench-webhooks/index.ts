import { randomUUID } from 'node:crypto'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { cpus, tmpdir } from 'node:os'
import { parseArgs } from 'node:util'
import { Agent, request } from 'undici'
import { openPglite } from '../../db/connect.js'
import { openPostgres } from '../../db/postgres.js'
import { buildApp } from '../../src/app.js'
import { loadConfig } from '../../src/config.js'
import { createOrganization } from '../../src/modules/users/service.js'
import { signatureHeader } from '../../src/outbox/signing.js'
import { writeBenchmarkSection } from '../lib/benchmarks-file.js'

// Measures webhook delivery on this machine: N patients created through the HTTP API, one local
// receiver registered for them. Reported beside ceilings measured in the same run: how fast plain
// signed POSTs reach the receiver, and how fast the API creates patients with no webhook at all.
// `npm run bench:webhooks -- --n 2000`; DATABASE_URL selects PostgreSQL, else in-memory PGlite.

const { values } = parseArgs({
  options: {
    n: { type: 'string', default: '2000' },
    clients: { type: 'string', default: '16' },
    out: { type: 'string', default: 'BENCHMARKS.md' },
  },
})
const N = Number(values.n)
const CLIENTS = Number(values.clients)
const databaseUrl = process.env.DATABASE_URL

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] as number

async function startReceiver() {
  const receipts = new Map<string, { at: number; eventAt: number }>()
  let onReceipt = () => {}
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      const at = Date.now()
      const id = String(req.headers['webhook-id'])
      if (!receipts.has(id)) {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { timestamp?: string }
        receipts.set(id, { at, eventAt: body.timestamp ? Date.parse(body.timestamp) : at })
      }
      res.statusCode = 204
      res.end()
      onReceipt()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    receipts,
    until(count: number) {
      return new Promise<void>((resolve) => {
        onReceipt = () => {
          if (receipts.size >= count) resolve()
        }
        onReceipt()
      })
    },
    reset() {
      receipts.clear()
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}

/** Runs `total` tasks with `parallel` at a time; returns the elapsed seconds. */
async function pool(total: number, parallel: number, task: (index: number) => Promise<void>) {
  const started = performance.now()
  let next = 0
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      while (next < total) await task(next++)
    }),
  )
  return (performance.now() - started) / 1000
}

async function main(): Promise<void> {
  const receiver = await startReceiver()
  const config = loadConfig({
    LOG_LEVEL: 'silent',
    DATA_DIR: tmpdir(),
    ENCRYPTION_KEY: Buffer.alloc(32, 1).toString('base64'),
    OUTBOX_WORKER: 'false',
    WEBHOOK_ALLOW_HTTP: 'true',
    WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
    RATE_LIMIT_AUTHENTICATED: String(10 * N + 100),
    // No mail leaves a benchmark.
    MAIL_TRANSPORT: 'log',
    ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
  })
  const database = databaseUrl ? openPostgres({ url: databaseUrl, poolMax: 10 }) : await openPglite({})
  const app = await buildApp(config, { database })
  const base = await app.listen({ host: '127.0.0.1', port: 0 })
  const client = new Agent({ connections: CLIENTS })

  const groupPath = `/bench/${randomUUID()}`
  const organization = await createOrganization(app.db, { name: 'Benchmark', groupPath })
  const subject = randomUUID()
  await app.db
    .insertInto('users')
    .values({
      organization_id: organization.id,
      subject,
      email: `${subject}@bench.test`,
      first_name: 'Bench',
      last_name: 'Admin',
      roles: ['ADMIN'],
    })
    .execute()
  const token = app.tokenIssuer?.issueAccessToken(
    {
      subject,
      email: `${subject}@bench.test`,
      firstName: 'Bench',
      lastName: 'Admin',
      roles: ['ADMIN'],
      groupPath,
    },
    randomUUID(),
  )
  const api = async (method: 'POST', path: string, body: object) => {
    const response = await request(`${base}${path}`, {
      method,
      dispatcher: client,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    })
    const text = await response.body.text()
    if (response.statusCode >= 300) throw new Error(`${method} ${path}: ${response.statusCode} ${text}`)
    return JSON.parse(text) as { data: { id: number } }
  }
  const createPatient = (index: number) =>
    api('POST', '/api/patients', {
      identification: {
        firstName: 'Bench',
        lastName: `Patient${index}`,
        dateOfBirth: '1980-01-01',
        gender: 'Other',
      },
    }).then(() => undefined)

  // Ceiling 1: the API creating patients, no webhook registered.
  const creationSeconds = await pool(N, CLIENTS, createPatient)
  const creationRate = N / creationSeconds

  // Ceiling 2: signed POSTs straight to the receiver, as many at once as the worker sends to one host.
  const direct = new Agent()
  const secret = Buffer.alloc(32, 2)
  const ceilingSeconds = await pool(N, config.webhooks.hostConcurrency, async (index) => {
    const body = JSON.stringify({
      event: 'patient.created',
      timestamp: new Date().toISOString(),
      data: { id: index },
    })
    const id = `ceiling-${index}`
    const timestamp = Math.floor(Date.now() / 1000)
    const response = await request(receiver.url, {
      method: 'POST',
      dispatcher: direct,
      headers: {
        'content-type': 'application/json',
        'webhook-id': id,
        'webhook-timestamp': String(timestamp),
        'webhook-signature': signatureHeader([secret], id, timestamp, body),
      },
      body,
    })
    await response.body.dump()
  })
  const httpCeiling = N / ceilingSeconds
  await direct.close()
  receiver.reset()

  await api('POST', '/api/webhooks', { url: receiver.url, events: ['patient.created'] })

  // Backlog drain: N events committed first, then the worker starts and sends them all.
  await pool(N, CLIENTS, createPatient)
  const drainStarted = performance.now()
  const drained = receiver.until(N)
  await app.outbox.start()
  await drained
  const drainRate = N / ((performance.now() - drainStarted) / 1000)
  receiver.reset()

  // Live: the worker runs while clients create patients as fast as they can.
  const liveStarted = Date.now()
  const live = receiver.until(N)
  const liveCreationSeconds = await pool(N, CLIENTS, createPatient)
  await live
  const liveSeconds = (Math.max(...[...receiver.receipts.values()].map((r) => r.at)) - liveStarted) / 1000
  const latencies = [...receiver.receipts.values()].map((r) => r.at - r.eventAt).sort((a, b) => a - b)
  const p50 = percentile(latencies, 50)
  const p99 = percentile(latencies, 99)

  await app.close()
  await client.close()
  await receiver.close()

  const kind = databaseUrl ? 'PostgreSQL' : 'PGlite (embedded, in memory)'
  const command = `${databaseUrl ? 'DATABASE_URL=postgres://… ' : ''}npm run bench:webhooks -- --n ${N} --clients ${CLIENTS}`
  const ratio = (value: number, ceiling: number) => `${((100 * value) / ceiling).toFixed(0)}%`
  const section = [
    `## Webhooks: ${kind}`,
    '',
    'N patients created through the API with one local receiver registered. Commit-to-receipt runs from the event timestamp (taken just before the statement that commits the change) to the receiver reading the request. Targets: at least 1,000 deliveries/s and p99 under 250 ms.',
    '',
    `\`${command}\` — ${new Date().toISOString().slice(0, 10)}, ${cpus().length} cores, Node ${process.version}, N = ${N}, ${CLIENTS} API clients, worker defaults (${config.webhooks.concurrency} in flight, ${config.webhooks.hostConcurrency} per host).`,
    '',
    '| measure | value | ceiling in the same run | ratio |',
    '|---|---|---|---|',
    `| backlog drain (deliveries/s) | ${drainRate.toFixed(0)} | ${httpCeiling.toFixed(0)} signed POSTs/s straight to the receiver | ${ratio(drainRate, httpCeiling)} |`,
    `| live: deliveries/s while patients are created | ${(N / liveSeconds).toFixed(0)} | ${creationRate.toFixed(0)} patients/s created with no webhook | ${ratio(N / liveSeconds, creationRate)} |`,
    `| live: patient creations/s with delivery running | ${(N / liveCreationSeconds).toFixed(0)} | ${creationRate.toFixed(0)} | ${ratio(N / liveCreationSeconds, creationRate)} |`,
    `| live: commit-to-receipt p50 | ${p50} ms | | |`,
    `| live: commit-to-receipt p99 | ${p99} ms | | |`,
    '',
  ].join('\n')
  process.stdout.write(`${section}\n`)

  await writeBenchmarkSection(`Webhooks: ${kind}`, section, values.out)
}

main().catch((error: unknown) => {
  process.stderr.write(`${(error as Error).stack}\n`)
  process.exitCode = 1
})
