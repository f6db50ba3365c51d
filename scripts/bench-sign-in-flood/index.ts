import { parseArgs } from 'node:util'
import { Agent, request } from 'undici'
import { hashPassword } from '../../src/lib/passwords.js'
import { benchApp, benchCaller } from '../lib/bench-app.js'
import { writeBenchmarkSection } from '../lib/benchmarks-file.js'

// Whether a flood of wrong-password sign-ins slows what shares the process with password hashing:
// the health check (a disk check) and a compressed patient list (zlib), over loopback HTTP. Their
// p50 while nothing else runs, then while `--flood` sign-ins are always in flight, in one run.
// Target: each p50 during the flood ≤ 3 × its quiet p50.
// `npm run bench:sign-in-flood -- --flood 48 --seconds 8`; DATABASE_URL names a PostgreSQL server
// (the run makes a database of its own there and drops it), else in-memory PGlite.

const { values } = parseArgs({
  options: {
    flood: { type: 'string', default: '48' },
    seconds: { type: 'string', default: '8' },
  },
})
const FLOOD = Math.min(Number(values.flood), 500)
const SECONDS = Math.min(Number(values.seconds), 60)
const PATIENTS = 25
const serverUrl = process.env.DATABASE_URL
const median = (list: number[]) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)] as number
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

async function main(): Promise<void> {
  const { app, kind, close } = await benchApp(serverUrl, 'ehr_bench_sign_in_flood', {
    // The flood stands for many accounts and addresses at once: the failure limits, which would
    // otherwise refuse it within the first seconds, are lifted for the run.
    RATE_LIMIT_SIGN_IN_ACCOUNT: '1000000000',
    RATE_LIMIT_SIGN_IN_ADDRESS: '1000000000',
  })
  // Bounds, so that the run ends even when the service stalls.
  const probes = new Agent({ connections: 2, headersTimeout: 60_000, bodyTimeout: 60_000 })
  const flooders = new Agent({ connections: FLOOD, headersTimeout: 60_000, bodyTimeout: 60_000 })
  try {
    const { organization, headers } = await benchCaller(app, ['NURSE'])
    const username = `flood-target@${organization.id}.bench.test`
    await app.db
      .insertInto('users')
      .values({
        organization_id: organization.id,
        subject: `flood-target-${organization.id}`,
        email: username,
        password_hash: await hashPassword('the-right-password'),
        first_name: 'Flood',
        last_name: 'Target',
        roles: ['NURSE'],
      })
      .execute()
    for (let i = 0; i < PATIENTS; i++) {
      const created = await app.inject({
        method: 'POST',
        url: '/api/patients',
        headers,
        payload: {
          identification: {
            firstName: `Bench${i}`,
            lastName: 'Patient',
            dateOfBirth: '1970-01-01',
            gender: 'Other',
          },
        },
      })
      if (created.statusCode !== 201) throw new Error(`patient not created: ${created.statusCode}`)
    }
    const base = await app.listen({ host: '127.0.0.1', port: 0 })

    const timed = async (path: string, extra: Record<string, string> = {}) => {
      const started = process.hrtime.bigint()
      const response = await request(`${base}${path}`, { dispatcher: probes, headers: extra })
      await response.body.arrayBuffer()
      if (response.statusCode !== 200) throw new Error(`${path}: ${response.statusCode}`)
      return Number(process.hrtime.bigint() - started) / 1e6
    }
    const list = () =>
      timed(`/api/patients?size=${PATIENTS}`, { ...headers, 'accept-encoding': 'gzip' }).then((ms) => ms)
    const health = () => timed('/actuator/health')
    // Sequential probes, alternating, for `seconds`: what one monitoring client and one user see.
    const probe = async (seconds: number) => {
      const samples = { health: [] as number[], list: [] as number[] }
      const until = performance.now() + seconds * 1000
      while (performance.now() < until) {
        samples.health.push(await health())
        samples.list.push(await list())
      }
      return samples
    }

    for (let i = 0; i < 20; i++) await Promise.all([health(), list()])
    process.stdout.write(`Quiet: probing for ${SECONDS} s…\n`)
    const quiet = await probe(SECONDS)

    // Each flooding client keeps one sign-in in flight; after a 429 it either waits the
    // Retry-After it was given, as HTTP clients should, or sends the next one at once, as an attack
    // would (a flood of cheap requests then, which loads the event loop whatever they ask for).
    const floodWith = async (honoursRetryAfter: boolean) => {
      const answers = new Map<number, number>()
      const signInMs: number[] = []
      let flooding = true
      const flooder = async () => {
        while (flooding) {
          const started = process.hrtime.bigint()
          const response = await request(`${base}/api/auth/login`, {
            dispatcher: flooders,
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ username, password: 'a-wrong-password' }),
          })
          await response.body.arrayBuffer()
          signInMs.push(Number(process.hrtime.bigint() - started) / 1e6)
          answers.set(response.statusCode, (answers.get(response.statusCode) ?? 0) + 1)
          const retryAfter = Number(response.headers['retry-after'] ?? 0)
          if (honoursRetryAfter && response.statusCode === 429) await sleep(Math.min(retryAfter, 10) * 1000)
        }
      }
      const flood = Array.from({ length: FLOOD }, flooder)
      // A second for the backlog to form before the first probe.
      await sleep(1000)
      const samples = await probe(SECONDS)
      flooding = false
      await Promise.all(flood)
      const statuses = [...answers.entries()]
        .sort(([a], [b]) => a - b)
        .map(([status, count]) => `${count} × ${status}`)
        .join(', ')
      return { samples, summary: `${statuses}; p50 ${median(signInMs).toFixed(0)} ms` }
    }
    process.stdout.write(`Flood: ${FLOOD} sign-ins in flight, waiting out Retry-After, for ${SECONDS} s…\n`)
    const polite = await floodWith(true)
    process.stdout.write(`Flood: ${FLOOD} sign-ins in flight, retried at once, for ${SECONDS} s…\n`)
    const blunt = await floodWith(false)

    const rows = [
      ['GET /actuator/health', 'health'],
      [`GET /api/patients?size=${PATIENTS} (gzip)`, 'list'],
    ] as const
    const ratio = (during: number[], before: number[]) => (median(during) / median(before)).toFixed(2)
    const heading = `Sign-in flood: ${kind}`
    const section = [
      `## ${heading}`,
      '',
      `p50 of sequential loopback requests for ${SECONDS} s with nothing else running, then for ${SECONDS} s each while ${FLOOD} clients keep a wrong-password sign-in of one account in flight (its failure limits lifted for the run): clients that wait out the Retry-After of a 429, then clients that retry at once. Target: each ≤ 3 × its quiet p50.`,
      '',
      `\`npm run bench:sign-in-flood -- --flood ${FLOOD} --seconds ${SECONDS}\` — ${new Date().toISOString().slice(0, 10)}, Node ${process.version}, default password-hashing settings.`,
      '',
      '| request | quiet p50 | flood, Retry-After waited out: p50 | ratio | flood, retried at once: p50 | ratio |',
      '|---|---|---|---|---|---|',
      ...rows.map(([name, key]) => {
        const [q, p, b] = [quiet[key], polite.samples[key], blunt.samples[key]]
        return `| ${name} | ${median(q).toFixed(2)} ms | ${median(p).toFixed(2)} ms | ${ratio(p, q)} | ${median(b).toFixed(2)} ms | ${ratio(b, q)} |`
      }),
      '',
      `The flood's sign-ins, Retry-After waited out: ${polite.summary}. Retried at once: ${blunt.summary}.`,
      '',
      'Retried at once, the flood is a stream of cheap requests (429s answered before any database work), sent from this process on the same cores: what slows the probes then is the event loop serving them, as any request flood would, not hashing; limits upstream, per address, are what bounds it.',
    ].join('\n')
    process.stdout.write(`${section}\n`)
    await writeBenchmarkSection(heading, section)
  } finally {
    await close()
    await Promise.all([probes.close(), flooders.close()])
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${(error as Error).stack}\n`)
  process.exitCode = 1
})
