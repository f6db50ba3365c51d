import { randomBytes } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import path from 'node:path'
import { sql } from 'kysely'
import { migrateToLatest } from '../../db/migrator.js'
import { openPostgres } from '../../db/postgres.js'
import { freePort, type Started, startProcess } from './processes.js'
import { BENCH_PASSWORD, type Seeded, seed } from './seed.js'

/** The benchmarks' PostgreSQL server; each benchmark makes databases of its own on it. */
export const adminUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
/** The rate limiter's shared store, as a production deployment of several instances has it. */
const redisUrl = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379'
/** The compiled scripts and bundle (the benchmarks run from dist/). */
export const dist = path.resolve(import.meta.dirname, '..', '..')
export const script = (file: string) => path.join(dist, file)
export const UPLOAD_MB = 100

/** A fresh database `ehr_bench_<patients>`, migrated and seeded. */
export async function prepareDatabase(
  patients: number,
): Promise<{ url: string; seeded: Seeded; seedSeconds: number }> {
  const name = `ehr_bench_${patients}`
  const admin = openPostgres({ url: adminUrl, poolMax: 1 })
  await sql`drop database if exists ${sql.id(name)} with (force)`.execute(admin.db)
  await sql`create database ${sql.id(name)}`.execute(admin.db)
  await admin.close()
  const url = new URL(adminUrl)
  url.pathname = `/${name}`
  const handle = openPostgres({ url: url.toString(), poolMax: 2 })
  await migrateToLatest(handle.db)
  const started = Date.now()
  const seeded = await seed(handle.db, patients)
  const seedSeconds = (Date.now() - started) / 1000
  await handle.close()
  return { url: url.toString(), seeded, seedSeconds }
}

const encryptionKey = randomBytes(32).toString('base64')

/** The service is started as `npm run start:prod` starts it: the same node options and bundle. */
async function productionCommand(build: string): Promise<string[]> {
  const { scripts } = JSON.parse(await readFile(path.join(build, '..', 'package.json'), 'utf8')) as {
    scripts: Record<string, string>
  }
  const [node, ...args] = (scripts['start:prod'] as string).replace(/^exec /, '').split(' ')
  if (node !== 'node') throw new Error('start:prod no longer starts with node; update the benchmark')
  return args.map((arg) => (arg.startsWith('dist/') ? path.join(build, arg.slice('dist/'.length)) : arg))
}

export interface ServiceOptions {
  /** Before the bundle, e.g. `--cpu-prof`. */
  nodeOptions?: string[]
  /** The Node.js binary (default: the benchmark's own). */
  node?: string
  /** The dist/ folder to start (default: this checkout's; another commit's: revision.ts). */
  build?: string
}

/**
 * The service in production mode on a free port: on PostgreSQL at `databaseUrl` with the rate
 * limiter counting in Redis, or embedded (PGlite in `dataDir`) without one.
 */
export async function startService(
  databaseUrl: string | undefined,
  dataDir: string,
  { nodeOptions = [], node, build = dist }: ServiceOptions = {},
): Promise<Started & { url: string }> {
  const port = await freePort()
  const service = await startProcess(
    [...nodeOptions, ...(await productionCommand(build))],
    {
      NODE_ENV: 'production',
      LOG_LEVEL: 'info',
      HOST: '127.0.0.1',
      PORT: String(port),
      // One public address for every instance, as behind a load balancer: tokens name it as their
      // issuer, so a token from one instance is accepted by the others.
      PUBLIC_URL: 'http://127.0.0.1',
      DATA_DIR: dataDir,
      ...(databaseUrl
        ? {
            DATABASE_URL: databaseUrl,
            ENCRYPTION_KEY: encryptionKey,
            MIGRATE_ON_START: 'false',
            REDIS_URL: redisUrl,
            // No mail leaves a benchmark.
            MAIL_TRANSPORT: 'log',
          }
        : {}),
      ADMIN_PASSWORD: BENCH_PASSWORD,
      MAX_UPLOAD_BYTES: String(UPLOAD_MB * 2 * 1024 * 1024),
      // Raised for the run: the benchmark is one client sending far beyond a real user's allowance.
      // Every request is still counted.
      RATE_LIMIT_AUTHENTICATED: '1000000000',
      RATE_LIMIT_ANONYMOUS: '1000000000',
    },
    /Server listening at/,
    node,
  )
  return { ...service, url: `http://127.0.0.1:${port}` }
}

export async function login(url: string, email: string): Promise<string> {
  const response = await fetch(`${url}/api/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username: email, password: BENCH_PASSWORD }),
  })
  const body = (await response.json()) as { data: { token: string } }
  return body.data.token
}
