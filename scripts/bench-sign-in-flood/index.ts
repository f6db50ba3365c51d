import { type ChildProcess, fork } from 'node:child_process'
import { parseArgs } from 'node:util'
import { Agent, request } from 'undici'
import { hashPassword } from '../../src/identity/password-hashing.js'
import { benchApp, benchCaller } from '../lib/bench-app.js'
import { writeBenchmarkSection } from '../lib/benchmarks-file.js'
import type { TcpProxy } from '../lib/tcp-proxy.js'
import type { FloodOrder, FloodReport } from './flooder.js'
import { backAfter, median, type ProbePair } from './recovery.js'

// Whether a flood of wrong-password sign-ins slows what shares the process with password hashing:
// the health check (a disk check) and a compressed patient list (zlib), over loopback HTTP. Their
// p50 while nothing else runs, then while `--flood` sign-ins are always in flight, in one run.
// Target: each p50 during the flood ≤ 3 × its quiet p50. On PostgreSQL, then, how soon they are
// back after a database fault during the flood (`--cut` seconds without the database). Target: 1 s.
// `npm run bench:sign-in-flood -- --flood 48 --seconds 8 --cut 5`; DATABASE_URL names a PostgreSQL
// server (the run makes a database of its own there and drops it), else in-memory PGlite.

const { values } = parseArgs({
  options: {
    flood: { type: 'string', default: '48' },
    seconds: { type: 'string', default: '8' },
    cut: { type: 'string', default: '5' },
  },
})
const FLOOD = Math.min(Number(values.flood), 500)
const SECONDS = Math.min(Number(values.seconds), 60)
const CUT_SECONDS = Math.min(Number(values.cut), 60)
// Probing under the flood before the cut, and after the restore (long enough to see the slow
// recovery the probes once had: docs/performance-log.md).
const BEFORE_CUT_SECONDS = 2
const AFTER_RESTORE_SECONDS = 20
// Probe pairs in a row that must be back (all 200, p50 of each within its bound).
const BACK_RUN = 10
const BOUND = 3
const RECOVERY_TARGET_MS = 1000
const PATIENTS = 25
const serverUrl = process.env.DATABASE_URL
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

// Flooding processes still running: ended with the run, should it fail on the way.
const flooding = new Set<ChildProcess>()

/**
 * `clients` flooding clients in a process of their own (flooder.ts), as attackers are other
 * machines: here they would share this process's event loop with the service they flood.
 */
function startFlood(order: Omit<FloodOrder, 'seconds'>) {
  // Bounded on its own too, should this process never tell it to stop.
  const seconds = 4 * (SECONDS + CUT_SECONDS + AFTER_RESTORE_SECONDS)
  const child = fork(new URL('./flooder.ts', import.meta.url), [JSON.stringify({ ...order, seconds })])
  flooding.add(child)
  child.once('exit', () => flooding.delete(child))
  const report = new Promise<FloodReport>((resolve, reject) => {
    child.once('message', (message) => resolve(message as FloodReport))
    child.once('exit', (code) => reject(new Error(`the flooding process ended (${code}) without a report`)))
  })
  // Awaited by `stop` only; a run that fails before then ends the process itself.
  report.catch(() => {})
  return {
    async stop(): Promise<string> {
      child.send('stop')
      const timeout = setTimeout(() => child.kill(), 30_000)
      try {
        const { answers, signInMs } = await report
        const statuses = answers
          .sort(([a], [b]) => a - b)
          .map(([status, count]) => `${count} × ${status || 'no answer'}`)
          .join(', ')
        return `${statuses}; p50 ${median(signInMs).toFixed(0)} ms`
      } finally {
        clearTimeout(timeout)
      }
    },
  }
}

async function main(): Promise<void> {
  const { app, kind, proxy, close } = await benchApp(
    serverUrl,
    'ehr_bench_sign_in_flood',
    {
      // The flood stands for many accounts and addresses at once: the failure limits, which would
      // otherwise refuse it within the first seconds, are lifted for the run.
      RATE_LIMIT_SIGN_IN_ACCOUNT: '1000000000',
      RATE_LIMIT_SIGN_IN_ADDRESS: '1000000000',
    },
    { proxied: true },
  )
  // Bounds, so that the run ends even when the service stalls.
  const probes = new Agent({ connections: 2, headersTimeout: 60_000, bodyTimeout: 60_000 })
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
      return { ms: Number(process.hrtime.bigint() - started) / 1e6, status: response.statusCode }
    }
    const list = () => timed(`/api/patients?size=${PATIENTS}`, { ...headers, 'accept-encoding': 'gzip' })
    const health = () => timed('/actuator/health')
    // One monitoring client's probe, then one user's list, in sequence.
    const pair = async (): Promise<ProbePair> => {
      const startedAt = performance.now()
      const [h, l] = [await health(), await list()]
      return { startedAt, health: h.ms, list: l.ms, ok: h.status === 200 && l.status === 200 }
    }
    // Sequential pairs until `until` (a performance.now() time).
    const pairsUntil = async (until: number, into: ProbePair[] = []) => {
      while (performance.now() < until) into.push(await pair())
      return into
    }
    const probe = async (seconds: number) => {
      const pairs = await pairsUntil(performance.now() + seconds * 1000)
      if (!pairs.every((p) => p.ok)) throw new Error('a probe did not answer 200')
      return { health: pairs.map((p) => p.health), list: pairs.map((p) => p.list) }
    }

    for (let i = 0; i < 20; i++) await Promise.all([health(), list()])
    process.stdout.write(`Quiet: probing for ${SECONDS} s…\n`)
    const quiet = await probe(SECONDS)
    const bounds = { health: BOUND * median(quiet.health), list: BOUND * median(quiet.list) }

    // Each flooding client keeps one sign-in in flight; after a 429 it either waits the
    // Retry-After it was given, as HTTP clients should, or sends the next one at once, as an attack
    // would (a flood of cheap requests then, which loads the event loop whatever they ask for).
    const floodWith = async (honoursRetryAfter: boolean) => {
      const flood = startFlood({ base, username, clients: FLOOD, honoursRetryAfter })
      // A second for the backlog to form before the first probe.
      await sleep(1000)
      const samples = await probe(SECONDS)
      return { samples, summary: await flood.stop() }
    }
    process.stdout.write(`Flood: ${FLOOD} sign-ins in flight, waiting out Retry-After, for ${SECONDS} s…\n`)
    const polite = await floodWith(true)
    process.stdout.write(`Flood: ${FLOOD} sign-ins in flight, retried at once, for ${SECONDS} s…\n`)
    const blunt = await floodWith(false)

    // The database cut for CUT_SECONDS during a flood that waits out Retry-After.
    const faulted = async (cutting: TcpProxy) => {
      const flood = startFlood({ base, username, clients: FLOOD, honoursRetryAfter: true })
      await sleep(1000)
      const pairs = await pairsUntil(performance.now() + BEFORE_CUT_SECONDS * 1000)
      const cutAt = performance.now()
      await cutting.cut()
      await pairsUntil(cutAt + CUT_SECONDS * 1000, pairs)
      await cutting.restore()
      const restoredAt = performance.now()
      await pairsUntil(restoredAt + AFTER_RESTORE_SECONDS * 1000, pairs)
      const summary = await flood.stop()
      const during = pairs.filter((p) => p.startedAt >= cutAt && p.startedAt < restoredAt)
      const back = backAfter(pairs, restoredAt, bounds, BACK_RUN)
      const firstOk = pairs.find((p) => p.startedAt >= restoredAt && p.ok)
      const afterBack =
        back === undefined ? [] : pairs.filter((p) => p.startedAt >= restoredAt + back && p.ok)
      return {
        summary,
        during: {
          pairs: during.length,
          ok: during.filter((p) => p.ok).length,
          health: during.map((p) => p.health),
          list: during.map((p) => p.list),
        },
        // When the first pair begun after the restore that answered 200 had its answers.
        firstOkAnswered: firstOk && firstOk.startedAt + firstOk.health + firstOk.list - restoredAt,
        back,
        afterBack: { health: afterBack.map((p) => p.health), list: afterBack.map((p) => p.list) },
      }
    }
    let fault: Awaited<ReturnType<typeof faulted>> | undefined
    if (proxy) {
      process.stdout.write(
        `Flood with a ${CUT_SECONDS} s database cut, then ${AFTER_RESTORE_SECONDS} s after…\n`,
      )
      fault = await faulted(proxy)
    }

    const rows = [
      ['GET /actuator/health', 'health'],
      [`GET /api/patients?size=${PATIENTS} (gzip)`, 'list'],
    ] as const
    const ratio = (during: number[], before: number[]) => (median(during) / median(before)).toFixed(2)
    const ms = (value: number) => `${value.toFixed(value < 10 ? 1 : 0)} ms`
    const faultLines = fault
      ? [
          '| request | during the cut: p50 | after it is back: p50 | ratio |',
          '|---|---|---|---|',
          ...rows.map(([name, key]) => {
            const after = fault.afterBack[key]
            return `| ${name} | ${median(fault.during[key]).toFixed(2)} ms | ${after.length ? `${median(after).toFixed(2)} ms` : '—'} | ${after.length ? ratio(after, quiet[key]) : '—'} |`
          }),
          '',
          `Back after the restore: **${fault.back === undefined ? `not within ${AFTER_RESTORE_SECONDS} s` : ms(fault.back)}** (target ≤ ${ms(RECOVERY_TARGET_MS)}): from the restore to the first of ${BACK_RUN} consecutive probe pairs, all answered 200, over which each probe's p50 is ≤ ${BOUND} × its quiet p50 (a p50, as for the flood's target: during a flood single probes above it are common). The first pair begun after the restore that answered 200 had its answers ${fault.firstOkAnswered === undefined ? 'never' : `${ms(fault.firstOkAnswered)} after it`}. During the cut, ${fault.during.ok} of ${fault.during.pairs} pairs answered 200. The flood's sign-ins over the phase (503 while the database is away, without Retry-After, so retried at once): ${fault.summary}.`,
        ]
      : [
          `Not measured here: it needs DATABASE_URL (PostgreSQL, reached through a loopback TCP proxy that the run cuts); PGlite runs inside the process, with no network to fault.`,
        ]
    const heading = `Sign-in flood: ${kind}`
    const section = [
      `## ${heading}`,
      '',
      `p50 of sequential loopback requests for ${SECONDS} s with nothing else running, then for ${SECONDS} s each while ${FLOOD} clients keep a wrong-password sign-in of one account in flight (its failure limits lifted for the run): clients that wait out the Retry-After of a 429, then clients that retry at once. The clients run in a process of their own, as attackers are other machines. Target: each ≤ ${BOUND} × its quiet p50.`,
      '',
      `\`npm run bench:sign-in-flood -- --flood ${FLOOD} --seconds ${SECONDS} --cut ${CUT_SECONDS}\` — ${new Date().toISOString().slice(0, 10)}, Node ${process.version}, default password-hashing settings.`,
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
      'Retried at once, the flood is a stream of cheap requests (429s answered before any database work): what slows the probes then is the event loop serving them, as any request flood would, not hashing; limits upstream, per address, are what bounds it.',
      '',
      `### Database fault during the flood`,
      '',
      `The flood again (Retry-After waited out), and ${BEFORE_CUT_SECONDS} s into its probes the database taken away for ${CUT_SECONDS} s (the service's connections to it dropped and new ones refused, by a loopback TCP proxy), then given back; the probes run throughout, and for ${AFTER_RESTORE_SECONDS} s after. Target: back within ${ms(RECOVERY_TARGET_MS)} of the restore.`,
      '',
      ...faultLines,
    ].join('\n')
    process.stdout.write(`${section}\n`)
    await writeBenchmarkSection(heading, section)
  } finally {
    for (const child of flooding) child.kill()
    await close()
    await probes.close()
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${(error as Error).stack}\n`)
  process.exitCode = 1
})
