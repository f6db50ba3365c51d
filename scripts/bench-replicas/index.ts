import { randomBytes } from 'node:crypto'
import { tmpdir } from 'node:os'
import { setTimeout as sleep } from 'node:timers/promises'
import { parseArgs } from 'node:util'
import { migrateToLatest } from '../../db/migrator.js'
import { openPostgres } from '../../db/postgres.js'
import { type App, buildApp } from '../../src/app.js'
import { loadConfig } from '../../src/config.js'
import { BENCH_PASSWORD, seed } from '../bench/seed.js'
import { writeBenchmarkSection } from '../lib/benchmarks-file.js'
import { startReplicaCluster } from '../lib/replica-cluster.js'

// Read replicas: the sorted patient list served by the primary alone against the same service
// reading it from a streaming replica, in paired rounds, on a primary and a replica of the run's
// own (initdb, pg_basebackup, pg_ctl); then how a replica that stops replaying leaves the rotation
// and comes back. `npm run bench:replicas -- --patients 100000 --seconds 10`.

const { values } = parseArgs({
  options: {
    patients: { type: 'string', default: '100000' },
    seconds: { type: 'string', default: '10' },
    concurrency: { type: 'string', default: '20' },
    rounds: { type: 'string', default: '3' },
  },
})
const PATIENTS = Number(values.patients)
const SECONDS = Number(values.seconds)
const CONCURRENCY = Number(values.concurrency)
const ROUNDS = Number(values.rounds)
const MAX_LAG_MS = 2000
const LIST = '/api/patients?size=20&sort=lastName,asc'
// Both services share the database, so they share the key its secrets are sealed with.
const ENCRYPTION_KEY = randomBytes(32).toString('base64')

const median = (numbers: number[]) =>
  [...numbers].sort((a, b) => a - b)[Math.floor(numbers.length / 2)] as number

async function serviceOn(primaryUrl: string, replicaUrl?: string): Promise<App> {
  const config = loadConfig({
    LOG_LEVEL: 'silent',
    DATA_DIR: tmpdir(),
    DATABASE_URL: primaryUrl,
    ENCRYPTION_KEY,
    OUTBOX_WORKER: 'false',
    HOUSEKEEPING_WORKER: 'false',
    MAIL_TRANSPORT: 'log',
    RATE_LIMIT_AUTHENTICATED: '1000000000',
    RATE_LIMIT_ANONYMOUS: '1000000000',
    DATABASE_REPLICA_MAX_LAG_MS: String(MAX_LAG_MS),
    DATABASE_REPLICA_CHECK_INTERVAL_MS: '100',
    ...(replicaUrl ? { DATABASE_READ_URLS: replicaUrl } : {}),
  })
  const app = await buildApp(config, { database: openPostgres({ url: primaryUrl, poolMax: 10 }) })
  await app.ready()
  return app
}

async function tokenOf(app: App, email: string): Promise<string> {
  const response = await app.inject({
    method: 'POST',
    url: '/api/auth/login',
    payload: { username: email, password: BENCH_PASSWORD },
  })
  return response.json().data.token
}

/** Requests per second of `path` with `CONCURRENCY` callers in a row for `SECONDS`; throws on a non-200. */
async function drive(app: App, token: string, path: string): Promise<number> {
  const until = Date.now() + SECONDS * 1000
  let done = 0
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (Date.now() < until) {
        const response = await app.inject({ url: path, headers: { authorization: `Bearer ${token}` } })
        if (response.statusCode !== 200) throw new Error(`${path}: ${response.statusCode} ${response.body}`)
        done++
      }
    }),
  )
  return done / SECONDS
}

/** Milliseconds until the replica's state is `state` (bounded). */
async function untilReplica(app: App, state: string): Promise<number> {
  const started = Date.now()
  while (app.readReplicas?.statuses()[0]?.state !== state) {
    if (Date.now() - started > 60_000) throw new Error(`the replica never became ${state}`)
    await sleep(20)
  }
  return Date.now() - started
}

async function main(): Promise<void> {
  process.stdout.write('Starting a primary and a streaming replica…\n')
  const cluster = await startReplicaCluster()
  try {
    const setup = openPostgres({ url: cluster.primaryUrl, poolMax: 2, statementTimeoutMs: 0 })
    await migrateToLatest(setup.db)
    process.stdout.write(`Seeding ${PATIENTS} patients…\n`)
    const seeded = await seed(setup.db, PATIENTS)
    await setup.close()
    await cluster.waitForCatchUp(300_000)

    const alone = await serviceOn(cluster.primaryUrl)
    const routed = await serviceOn(cluster.primaryUrl, cluster.replicaUrl)
    try {
      await untilReplica(routed, 'UP')
      const [aloneToken, routedToken] = [
        await tokenOf(alone, seeded.email),
        await tokenOf(routed, seeded.email),
      ]
      const ratios: number[] = []
      const figures: { alone: number; routed: number }[] = []
      for (let round = 0; round < ROUNDS; round++) {
        process.stdout.write(`  round ${round + 1} of ${ROUNDS}\n`)
        const primaryOnly = await drive(alone, aloneToken, LIST)
        const withReplica = await drive(routed, routedToken, LIST)
        figures.push({ alone: primaryOnly, routed: withReplica })
        ratios.push(withReplica / primaryOnly)
      }

      // Lag: the replica stops replaying, the primary moves on; how long until reads leave it, and
      // how long after replay resumes until they come back.
      await cluster.pauseReplay()
      const created = await routed.inject({
        method: 'POST',
        url: '/api/patients',
        headers: { authorization: `Bearer ${routedToken}` },
        payload: {
          identification: { firstName: 'Lag', lastName: 'Probe', dateOfBirth: '1980-01-01', gender: 'Other' },
        },
      })
      if (created.statusCode !== 201) throw new Error(`patient not created: ${created.statusCode}`)
      const outAfterMs = await untilReplica(routed, 'LAGGING')
      const duringLag = await drive(routed, routedToken, LIST)
      await cluster.resumeReplay()
      const backAfterMs = await untilReplica(routed, 'UP')

      const mid = median(ratios)
      const heading = 'Read replicas (npm run bench:replicas)'
      const section = [
        `## ${heading}`,
        '',
        `\`npm run bench:replicas -- --patients ${PATIENTS} --seconds ${SECONDS} --concurrency ${CONCURRENCY} --rounds ${ROUNDS}\` — ${new Date().toISOString().slice(0, 10)}, Node ${process.version}; a primary and one streaming replica of the run's own, both on this machine; the service in-process (requests through Fastify's inject, no network), ${CONCURRENCY} callers at once.`,
        '',
        '| round | primary alone, req/s | lists from the replica, req/s | ratio |',
        '|---|---|---|---|',
        ...figures.map(
          ({ alone: a, routed: r }, index) =>
            `| ${index + 1} | ${a.toFixed(0)} | ${r.toFixed(0)} | ${(r / a).toFixed(2)} |`,
        ),
        '',
        `- \`GET ${LIST}\` reading a replica: ${mid.toFixed(2)} × the primary alone (median of ${ROUNDS} paired rounds). On this 2-core machine the service's own process, the primary, the replica and the load share two cores, so moving reads to a replica cannot add CPU: the figure shows what routing costs (the per-request replica choice, the position kept per caller), not what a replica on its own machine would add. There, list reads leave the primary's CPU to writes.`,
        `- A replica that stops replaying left the rotation ${(outAfterMs / 1000).toFixed(1)} s after the primary moved on (limit DATABASE_REPLICA_MAX_LAG_MS=${MAX_LAG_MS}, checked every 100 ms); meanwhile and after, every read was answered (${duringLag.toFixed(0)} req/s from the primary while it lagged, no errors). It was back in rotation ${(backAfterMs / 1000).toFixed(1)} s after replay resumed.`,
      ].join('\n')
      process.stdout.write(`${section}\n`)
      await writeBenchmarkSection(heading, section)
    } finally {
      await alone.close()
      await routed.close()
    }
  } finally {
    await cluster.destroy()
  }
}

await main()
