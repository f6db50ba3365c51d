import { randomBytes, randomInt } from 'node:crypto'
import { existsSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { parseArgs } from 'node:util'
import { sql } from 'kysely'
import { type DatabaseHandle, openPglite } from '../../db/connect.js'
import { embeddedDatabaseDir } from '../../db/pglite-start.js'
import { openPostgres } from '../../db/postgres.js'
import { runCommand } from '../lib/run-command.js'
import { countFindings, describeFindings, problemCount } from './count.js'
import { type Ledger, newLedger, runLoad, seededRandom } from './load.js'
import { ENTRIES, type Service, startService, stopService } from './server.js'

const USAGE = `npm run drill:crash -- [--kills N] [--clients N] [--min-seconds S] [--max-seconds S]
                         [--database-url URL] [--bundle] [--seed N] [--small] [--keep]

Starts the service as a process, sends it a mix of requests from several clients (patients created
and read, appointments booked, invoices created and paid, documents uploaded), kills it with SIGKILL
at a random moment of each round, restarts it on the same data, and at the end counts, for the
requests it acknowledged (2xx): records missing, audit records missing, outbox events missing; and
half-written rows. Exits 1 if any count is not zero.

  --kills N          rounds, each ended by a SIGKILL (default 5)
  --clients N        concurrent clients (default 4)
  --min-seconds S    earliest kill after a round's load starts (default 2)
  --max-seconds S    latest kill (default 8)
  --database-url URL a PostgreSQL server: the drill creates a database of its own there and drops it
                     at the end (default: the embedded database in a temporary directory)
  --bundle           run dist/server.mjs (npm run build) instead of the sources
  --seed N           replay a drill's choices (kill moments, request mix)
  --small            2 kills, 3 clients, kills 2–4 s into their rounds: under a minute, for CI
  --keep             keep the temporary data directory (and database) for inspection`

const START_TIMEOUT_MS = 60_000

async function main(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      kills: { type: 'string' },
      clients: { type: 'string' },
      'min-seconds': { type: 'string' },
      'max-seconds': { type: 'string' },
      'database-url': { type: 'string' },
      bundle: { type: 'boolean', default: false },
      seed: { type: 'string' },
      small: { type: 'boolean', default: false },
      keep: { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
  })
  if (values.help) {
    process.stdout.write(`${USAGE}\n`)
    return 0
  }
  const positive = (name: string, value: string | undefined, fallback: number) => {
    const parsed = value === undefined ? fallback : Number(value)
    if (!(parsed > 0) || !Number.isFinite(parsed))
      throw new Error(`--${name} must be a positive number\n\n${USAGE}`)
    return parsed
  }
  const kills = Math.floor(positive('kills', values.kills, values.small ? 2 : 5))
  const clients = Math.floor(positive('clients', values.clients, values.small ? 3 : 4))
  const minMs = 1000 * positive('min-seconds', values['min-seconds'], 2)
  const maxMs = Math.max(minMs, 1000 * positive('max-seconds', values['max-seconds'], values.small ? 4 : 8))
  const seed = values.seed === undefined ? randomInt(2 ** 31) : Math.floor(Number(values.seed))
  const random = seededRandom(seed)
  const entry = values.bundle ? ENTRIES.bundle : ENTRIES.source
  if (values.bundle && !existsSync(entry[0] as string))
    throw new Error('No dist/server.mjs: run `npm run build` first')

  const runId = randomBytes(4).toString('hex')
  const dataDir = await mkdtemp(path.join(tmpdir(), 'ehr-drill-'))
  const serverUrl = values['database-url']
  const databaseName = `ehr_drill_${runId}`
  let databaseUrl: string | undefined
  let service: Service | undefined
  let database: DatabaseHandle | undefined
  try {
    if (serverUrl) {
      databaseUrl = await createDatabase(serverUrl, databaseName)
    }
    const admin = {
      username: `drill-${runId}@example.test`,
      password: `drill ${randomBytes(18).toString('base64url')}`,
    }
    const env = {
      DATA_DIR: dataDir,
      ADMIN_EMAIL: admin.username,
      ADMIN_PASSWORD: admin.password,
      BOOTSTRAP_ORGANIZATION: `Crash drill ${runId}`,
      ENCRYPTION_KEY: randomBytes(32).toString('base64'),
      // One user sends far more than a person would; the drill measures durability, not the limit.
      RATE_LIMIT_AUTHENTICATED: '1000000000',
      MAIL_TRANSPORT: 'log',
      ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
    }
    process.stdout.write(
      `crash drill ${runId}: ${kills} kills, ${clients} clients, kill ${minMs / 1000}–${maxMs / 1000} s into each round, ${databaseUrl ? `PostgreSQL database ${databaseName}` : 'embedded database'}, ${values.bundle ? 'dist/server.mjs' : 'src/server.ts'}, seed ${seed}\n`,
    )

    service = await startService(entry, env, START_TIMEOUT_MS)
    let token = await signIn(service.baseUrl, admin)
    const me = await call<{ id: string; organizationId: number }>(
      service.baseUrl,
      token,
      'GET',
      '/api/auth/me',
    )
    const provider = await call<{ id: number }>(service.baseUrl, token, 'POST', '/api/providers', {
      firstName: 'Drill',
      lastName: 'Provider',
      title: 'MD',
      specialty: 'Family Medicine',
      npi: '1234567893',
      timeZone: 'UTC',
      slotMinutes: 30,
      weeklyHours: ['MONDAY', 'TUESDAY', 'WEDNESDAY', 'THURSDAY', 'FRIDAY', 'SATURDAY', 'SUNDAY'].map(
        (dayOfWeek) => ({ dayOfWeek, startTime: '00:00:00', endTime: '23:30:00' }),
      ),
    })
    const ledger = newLedger(provider.id)

    for (let round = 1; round <= kills; round += 1) {
      if (!service) {
        const restarted = Date.now()
        service = await startService(entry, env, START_TIMEOUT_MS)
        token = await signIn(service.baseUrl, admin)
        process.stdout.write(`  restarted in ${((Date.now() - restarted) / 1000).toFixed(1)} s\n`)
      }
      const before = snapshot(ledger)
      const killAfterMs = minMs + Math.floor(random() * (maxMs - minMs))
      const running = service
      const killed = new Promise<void>((resolve) =>
        setTimeout(() => {
          running.child.kill('SIGKILL')
          resolve()
        }, killAfterMs),
      )
      await runLoad(
        ledger,
        { baseUrl: running.baseUrl, token, clients, requestIdPrefix: `drill-${runId}-${round}`, random },
        killed,
      )
      await stopService(running, 'SIGKILL')
      service = undefined
      const after = snapshot(ledger)
      process.stdout.write(
        `round ${round}: SIGKILL after ${(killAfterMs / 1000).toFixed(1)} s; ${after.acknowledged - before.acknowledged} acknowledged, ${after.refused - before.refused} refused, ${after.unanswered - before.unanswered} cut off\n`,
      )
    }

    // The service must come back after the last kill; then it stops cleanly, so the embedded
    // database can be opened here. Whatever it had only in memory at the kills is gone by now.
    const restarted = Date.now()
    service = await startService(entry, env, START_TIMEOUT_MS)
    await signIn(service.baseUrl, admin)
    process.stdout.write(
      `  restarted in ${((Date.now() - restarted) / 1000).toFixed(1)} s; stopping it cleanly\n`,
    )
    await stopService(service, 'SIGTERM')
    service = undefined

    database = databaseUrl
      ? openPostgres({ url: databaseUrl, poolMax: 2 })
      : await openPglite({ dataDir: embeddedDatabaseDir(dataDir) })
    const findings = await countFindings(database.db, {
      organizationId: me.organizationId,
      userId: Number(me.id),
      acknowledged: ledger.acknowledged,
      documentsDir: path.join(dataDir, 'documents'),
    })
    if (ledger.refused.size > 0) {
      process.stdout.write(
        `refused (not counted): ${[...ledger.refused].map(([key, n]) => `${key} ×${n}`).join(', ')}\n`,
      )
    }
    process.stdout.write(`${describeFindings(findings)}\n`)
    const problems = problemCount(findings)
    process.stdout.write(
      problems === 0 ? 'crash drill passed\n' : `crash drill FAILED: ${problems} problem(s)\n`,
    )
    return problems === 0 ? 0 : 1
  } catch (error) {
    if (service) process.stderr.write(`last output of the service:\n${service.tail()}\n`)
    throw error
  } finally {
    if (service) await stopService(service, 'SIGKILL')
    await database?.close()
    if (values.keep) {
      process.stdout.write(`kept: ${dataDir}${databaseUrl ? ` and database ${databaseName}` : ''}\n`)
    } else {
      await rm(dataDir, { recursive: true, force: true })
      if (serverUrl && databaseUrl) await dropDatabase(serverUrl, databaseName)
    }
  }
}

function snapshot(ledger: Ledger) {
  const refused = [...ledger.refused.values()].reduce((total, n) => total + n, 0)
  return { acknowledged: ledger.acknowledged.length, refused, unanswered: ledger.unanswered }
}

async function createDatabase(serverUrl: string, name: string): Promise<string> {
  const server = openPostgres({ url: serverUrl, poolMax: 1 })
  try {
    await sql`create database ${sql.id(name)}`.execute(server.db)
  } finally {
    await server.close()
  }
  const url = new URL(serverUrl)
  url.pathname = `/${name}`
  return url.toString()
}

async function dropDatabase(serverUrl: string, name: string): Promise<void> {
  const server = openPostgres({ url: serverUrl, poolMax: 1 })
  try {
    await sql`drop database if exists ${sql.id(name)} with (force)`.execute(server.db)
  } finally {
    await server.close()
  }
}

/** A setup request, which must succeed: its `data`. */
async function call<T>(
  baseUrl: string,
  token: string | undefined,
  method: string,
  route: string,
  body?: object,
) {
  const response = await fetch(`${baseUrl}${route}`, {
    method,
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(body ? { 'content-type': 'application/json' } : {}),
    },
    body: body ? JSON.stringify(body) : undefined,
    signal: AbortSignal.timeout(30_000),
  })
  const text = await response.text()
  if (!response.ok) throw new Error(`${method} ${route}: HTTP ${response.status} ${text}`)
  return (JSON.parse(text) as { data: T }).data
}

const signIn = async (baseUrl: string, credentials: { username: string; password: string }) =>
  (await call<{ token: string }>(baseUrl, undefined, 'POST', '/api/auth/login', credentials)).token

runCommand(main)
