import { spawn } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { loadavg, tmpdir } from 'node:os'
import path from 'node:path'
import { parseArgs } from 'node:util'
import { findTemplate } from '../../db/embedded-template.js'
import { writeBenchmarkSection } from '../lib/benchmarks-file.js'
import { postgresCpuMs, processCpuMs } from './cpu.js'
import { imageRuntime } from './image-node.js'
import type { LoadPlan } from './load.js'
import { freePort, peakMemoryMb, residentMemoryMb, runJson, type Started, startProcess } from './processes.js'
import { buildRevision } from './revision.js'
import { CREATED_PATIENT, FIRST_NAMES, LAST_NAMES, type Seeded } from './seed.js'
import { adminUrl, dist, login, prepareDatabase, script, startService, UPLOAD_MB } from './service.js'
import { uploadMemoryGrowthMb } from './upload.js'

const { values } = parseArgs({
  options: {
    patients: { type: 'string', default: '100000' },
    compare: { type: 'string' },
    before: { type: 'string' },
    'before-only': { type: 'boolean', default: false },
    'api-only': { type: 'boolean', default: false },
    seconds: { type: 'string', default: '10' },
    connections: { type: 'string', default: '50' },
    rounds: { type: 'string', default: '3' },
  },
})
const PATIENTS = Number(values.patients)
const SECONDS = Number(values.seconds)
const CONNECTIONS = Number(values.connections)
const ROUNDS = Number(values.rounds)
const loadAtStart = loadavg()[0]?.toFixed(1)

interface Measure {
  rps: number
  p50: number
  p99: number
  non2xx: number
  total: number
  totalWithWarmup: number
}

async function startCeiling(kind: string, databaseUrl: string, organizationId = 0) {
  const port = await freePort()
  const ceiling = await startProcess(
    [script('scripts/bench/ceiling.js'), kind, String(port), databaseUrl, String(organizationId)],
    {},
    /ready/,
  )
  return { ...ceiling, url: `http://127.0.0.1:${port}` }
}

function drive(
  plan: Omit<LoadPlan, 'connections' | 'warmupSeconds' | 'seconds'>,
  connections = CONNECTIONS,
): Promise<Measure> {
  const full: LoadPlan = { ...plan, connections, warmupSeconds: 3, seconds: SECONDS }
  return runJson<Measure>([script('scripts/bench/load.js'), JSON.stringify(full)])
}

const futureDate = () => new Date(Date.now() + 7 * 86_400_000).toISOString().slice(0, 10)

function scenarios(service: string, token: string, seeded: Seeded) {
  const auth = { authorization: `Bearer ${token}` }
  const ids: [number, number] = [seeded.firstPatientId, seeded.lastPatientId]
  return {
    'GET /api/patients/{id}': {
      url: service,
      method: 'GET',
      path: '/api/patients/{id}',
      idRange: ids,
      headers: auth,
    },
    'GET /fhir/R4/Patient/{id}': {
      url: service,
      method: 'GET',
      path: '/fhir/R4/Patient/{id}',
      idRange: ids,
      headers: auth,
    },
    'GET /api/patients (sorted page)': {
      url: service,
      method: 'GET',
      path: '/api/patients?size=20&sort=lastName,asc',
      headers: auth,
    },
    'GET /api/patients?lastName=': {
      url: service,
      method: 'GET',
      path: '/api/patients?size=20&lastName=Kowalski',
      headers: auth,
    },
    'GET /api/patients/search?q=': {
      url: service,
      method: 'GET',
      path: '/api/patients/search?q=kowalski%20olga',
      headers: auth,
    },
    'POST /api/patients': {
      url: service,
      method: 'POST',
      path: '/api/patients',
      body: CREATED_PATIENT,
      headers: auth,
    },
    'GET /api/appointments/available-slots': {
      url: service,
      method: 'GET',
      path: `/api/appointments/available-slots?providerId=${seeded.providerIds[0]}&date=${futureDate()}`,
      headers: auth,
    },
    'GET /api/patients/{id}/chart': {
      url: service,
      method: 'GET',
      path: '/api/patients/{id}/chart',
      idRange: ids,
      headers: auth,
    },
    'GET /actuator/health': { url: service, method: 'GET', path: '/actuator/health', headers: {} },
  } satisfies Record<string, Omit<LoadPlan, 'connections' | 'warmupSeconds' | 'seconds'>>
}

const round = (value: number, digits = 0) => Number(value.toFixed(digits))

type Plan = Omit<LoadPlan, 'connections' | 'warmupSeconds' | 'seconds'>

interface PairedRatios {
  rps: number[]
  p99: number[]
  p50: number[]
}

/** CPU time per request (µs) in each round, of the server driven and of PostgreSQL meanwhile. */
interface CpuPerRequest {
  server: number[]
  postgres: number[]
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2
}

/** Drives `plan` and reads the CPU time `server` (a pid) and PostgreSQL used meanwhile, per request. */
async function driveCounting(plan: Plan, server: number, cpu: CpuPerRequest): Promise<Measure> {
  const before = { server: processCpuMs(server), postgres: postgresCpuMs() }
  const measured = await drive(plan)
  const perRequest = (ms: number) => round((ms * 1000) / Math.max(measured.totalWithWarmup, 1), 1)
  cpu.server.push(perRequest(processCpuMs(server) - before.server))
  cpu.postgres.push(perRequest(postgresCpuMs() - before.postgres))
  return measured
}

/**
 * A baseline (a ceiling, or the smaller database) and a scenario driven back to back, ROUNDS times,
 * with the scenario's figures as ratios to the baseline's of the same round. On a shared machine a
 * burst of work elsewhere sways one measurement; the median of the rounds' ratios is what a target
 * is held to. Given the pids of the two servers, it also counts the CPU time per request that each,
 * and PostgreSQL, took: the part of the gap between the two that is work rather than waiting.
 */
async function pairedRatios(
  baseline: Plan,
  scenario: Plan,
  servers?: { baseline: number; scenario: number },
): Promise<PairedRatios & { cpu?: { baseline: CpuPerRequest; scenario: CpuPerRequest } }> {
  const ratios: PairedRatios = { rps: [], p99: [], p50: [] }
  const cpu = { baseline: { server: [], postgres: [] }, scenario: { server: [], postgres: [] } }
  for (let i = 0; i < ROUNDS; i++) {
    const base = await (servers ? driveCounting(baseline, servers.baseline, cpu.baseline) : drive(baseline))
    const measured = await (servers
      ? driveCounting(scenario, servers.scenario, cpu.scenario)
      : drive(scenario))
    if ([base, measured].some((m) => m.non2xx > 0 || m.total === 0))
      throw new Error(
        `non-2xx answers, or none at all, in a paired round: ${JSON.stringify({ base, measured })}`,
      )
    ratios.rps.push(measured.rps / base.rps)
    ratios.p99.push(measured.p99 / Math.max(base.p99, 1))
    ratios.p50.push(measured.p50 / Math.max(base.p50, 1))
  }
  return servers ? { ...ratios, cpu } : ratios
}

/** Medians of the PGlite starts' memory, each with its rounds. */
function describeStartMemory(starts: StartMemory[]): string {
  const of = (key: keyof StartMemory) => {
    const values = starts.map((start) => start[key])
    return `${median(values)} MB (${values.join(', ')})`
  }
  return `when ready ${of('ready')}, at most ${of('peak')} up to ${SETTLE_MS / 1000} s later, then ${of('settled')}`
}

const describeRatios = (ratios: number[]) =>
  `${round(median(ratios), 2)} (rounds: ${ratios.map((ratio) => round(ratio, 2)).join(', ')})`

/**
 * Scale-out on one machine: a second instance on the same database, the same total connections
 * split between the two, both driven at once. Their requests per second add up; latencies are the
 * worse of the two.
 */
async function driveTwoInstances(
  first: Started & { url: string },
  databaseUrl: string,
  dataDir: string,
  plan: Omit<LoadPlan, 'connections' | 'warmupSeconds' | 'seconds'>,
): Promise<Measure> {
  const second = await startService(databaseUrl, dataDir)
  try {
    const half = Math.max(1, Math.floor(CONNECTIONS / 2))
    const [a, b] = await Promise.all([
      drive({ ...plan, url: first.url }, half),
      drive({ ...plan, url: second.url }, CONNECTIONS - half),
    ])
    return {
      rps: a.rps + b.rps,
      p50: Math.max(a.p50, b.p50),
      p99: Math.max(a.p99, b.p99),
      non2xx: a.non2xx + b.non2xx,
      total: a.total + b.total,
      totalWithWarmup: a.totalWithWarmup + b.totalWithWarmup,
    }
  } finally {
    await second.stop()
  }
}

interface ColdStarts {
  /** The Node.js they ran on. */
  version: string
  pglite: number[]
  postgres: number[]
  /** Resident memory of each PGlite start (its thread's WebAssembly memory included), MB. */
  pgliteMemory: StartMemory[]
}

interface StartMemory {
  ready: number
  /** The most it held up to SETTLE_MS after ready. */
  peak: number
  /** SETTLE_MS after ready. */
  settled: number
}

// A start keeps compiling the embedded database's WebAssembly for a moment after ready (on Node.js
// 24, V8 re-compiles its busiest functions in the background), which holds memory until it ends.
const SETTLE_MS = 3000

async function startMemory(pid: number): Promise<StartMemory> {
  const ready = Math.round(residentMemoryMb(pid))
  await new Promise((resolve) => setTimeout(resolve, SETTLE_MS))
  return { ready, peak: Math.round(peakMemoryMb(pid)), settled: Math.round(residentMemoryMb(pid)) }
}

interface Starts {
  /** Each on a new data directory, embedded: the database created, migrated and given its administrator. */
  first: number[]
  fromTemplate: boolean
  /** On the benchmark's Node.js, then on the Docker image's if that is another. */
  cold: ColdStarts[]
}

// A first start's few seconds sway with the machine's load more than the rest: the median of these.
const FIRST_START_ROUNDS = 3
// One start is swayed by whatever else the machine does in that second; a target is held to the median.
const COLD_START_ROUNDS = 3

/**
 * Milliseconds from spawn to ready: first starts, then cold starts on the database the last one
 * made, on each runtime in turn within a round. A runtime's cold starts follow one start of its own
 * that is not counted: a restart finds the compile cache (Node.js 22 and later) the start before it
 * left.
 */
async function measureStarts(databaseUrl: string): Promise<Starts> {
  const runtimes = [{ version: process.version, node: process.execPath }]
  const image = await imageRuntime(path.resolve(dist, '..'))
  if (image.node !== process.execPath) runtimes.push(image)
  const fromTemplate = findTemplate() !== undefined
  const root = await mkdtemp(path.join(tmpdir(), 'ehr-bench-'))
  try {
    const first: number[] = []
    let dataDir = root
    for (let round = 0; round < FIRST_START_ROUNDS; round++) {
      dataDir = await mkdtemp(path.join(root, 'data-'))
      const started = await startService(undefined, dataDir)
      first.push(started.startupMs)
      await started.stop()
    }
    const cold = runtimes.map(({ version }) => ({
      version,
      pglite: [] as number[],
      postgres: [] as number[],
      pgliteMemory: [] as StartMemory[],
    }))
    for (const { node } of runtimes) await (await startService(undefined, dataDir, { node })).stop()
    for (let round = 0; round < COLD_START_ROUNDS; round++) {
      for (const [index, { node }] of runtimes.entries()) {
        const times = cold[index] as ColdStarts
        for (const [databaseUrlOf, list] of [
          [undefined, times.pglite],
          [databaseUrl, times.postgres],
        ] as const) {
          const started = await startService(databaseUrlOf, dataDir, { node })
          list.push(started.startupMs)
          if (!databaseUrlOf) times.pgliteMemory.push(await startMemory(started.child.pid as number))
          await started.stop()
        }
      }
    }
    return { first, fromTemplate, cold }
  } finally {
    await rm(root, { recursive: true, force: true })
  }
}

const GROWTH_SCENARIOS = [
  'GET /api/patients (sorted page)',
  'GET /api/patients?lastName=',
  'GET /api/patients/search?q=',
] as const

interface Growth {
  size: number
  seedSeconds: number
  ratios: Record<(typeof GROWTH_SCENARIOS)[number], PairedRatios>
}

/**
 * The list and search scenarios on a second database of `size` patients, each paired round by
 * round with the same scenario on the run's own database.
 */
async function measureGrowth(
  size: number,
  smallPlans: ReturnType<typeof scenarios>,
  dataDir: string,
): Promise<Growth> {
  process.stdout.write(`Seeding ${size} patients for the comparison…\n`)
  const large = await prepareDatabase(size)
  process.stdout.write(`  seeded in ${large.seedSeconds.toFixed(1)} s\n`)
  const largeService = await startService(large.url, dataDir)
  try {
    const largePlans = scenarios(
      largeService.url,
      await login(largeService.url, large.seeded.email),
      large.seeded,
    )
    const ratios = {} as Growth['ratios']
    for (const name of GROWTH_SCENARIOS) {
      process.stdout.write(`  ${name}: ${ROUNDS} rounds, ${PATIENTS} then ${size} patients\n`)
      ratios[name] = await pairedRatios(smallPlans[name], largePlans[name])
    }
    return { size, seedSeconds: large.seedSeconds, ratios }
  } finally {
    await largeService.stop()
  }
}

async function main(): Promise<void> {
  process.stdout.write(`Seeding ${PATIENTS} patients…\n`)
  const main = await prepareDatabase(PATIENTS)
  process.stdout.write(`  seeded in ${main.seedSeconds.toFixed(1)} s\n`)
  const dataDir = await mkdtemp(path.join(tmpdir(), 'ehr-bench-'))
  const service = await startService(main.url, dataDir)
  if (values['before-only']) return await compareOnly(main, dataDir, service)
  const constant = await startCeiling('constant', main.url)
  const select = await startCeiling('select', main.url)
  const selectCoalesced = await startCeiling('select-coalesced', main.url)
  const insert = await startCeiling('insert', main.url)
  const sortedPage = await startCeiling('sorted-page', main.url, main.seeded.organizationId)
  const token = await login(service.url, main.seeded.email)
  const plans = scenarios(service.url, token, main.seeded)
  // Before any scenario writes to the smaller database, so both sizes are measured as seeded.
  const growth = values.compare ? await measureGrowth(Number(values.compare), plans, dataDir) : undefined

  const ids: [number, number] = [main.seeded.firstPatientId, main.seeded.lastPatientId]
  const ceilingPlans: Record<'A' | 'B' | 'Bc' | 'C' | 'S', Plan> = {
    A: { url: constant.url, method: 'GET', path: '/', headers: {} },
    B: { url: select.url, method: 'GET', path: '/patients/{id}', idRange: ids, headers: {} },
    Bc: { url: selectCoalesced.url, method: 'GET', path: '/patients/{id}', idRange: ids, headers: {} },
    C: {
      url: insert.url,
      method: 'POST',
      path: '/patients',
      body: JSON.stringify({ organizationId: main.seeded.organizationId, userId: 1 }),
      headers: {},
    },
    S: { url: sortedPage.url, method: 'GET', path: '/patients', headers: {} },
  }
  const ceilingA = await drive(ceilingPlans.A)
  const ceilingB = await drive(ceilingPlans.B)
  const ceilingBc = await drive(ceilingPlans.Bc)
  const ceilingC = await drive(ceilingPlans.C)
  const ceilingS = await drive(ceilingPlans.S)
  const results: Record<string, Measure> = {}
  for (const [name, plan] of Object.entries(plans)) {
    process.stdout.write(`  ${name}\n`)
    results[name] = await drive(plan)
  }
  process.stdout.write(`  ${ROUNDS} paired rounds for the targets\n`)
  const paired = {
    byId: await pairedRatios(ceilingPlans.B, plans['GET /api/patients/{id}']),
    byIdCoalesced: await pairedRatios(ceilingPlans.Bc, plans['GET /api/patients/{id}'], {
      baseline: selectCoalesced.child.pid as number,
      scenario: service.child.pid as number,
    }),
    create: await pairedRatios(ceilingPlans.C, plans['POST /api/patients']),
    fhirRead: await pairedRatios(plans['GET /api/patients/{id}'], plans['GET /fhir/R4/Patient/{id}']),
    sortedPage: await pairedRatios(ceilingPlans.S, plans['GET /api/patients (sorted page)']),
  }
  const before = values.before
    ? await againstRevision(
        values.before,
        main.url,
        dataDir,
        plans['GET /api/patients/{id}'],
        service.child.pid as number,
        main.seeded,
      )
    : undefined
  const peak = peakMemoryMb(service.child.pid as number)
  const upload = await uploadMemoryGrowthMb(
    { url: service.url, pid: service.child.pid as number },
    token,
    main.seeded.firstPatientId,
    UPLOAD_MB,
  )
  for (const started of [constant, select, selectCoalesced, insert, sortedPage]) await started.stop()
  const twoInstances = await driveTwoInstances(service, main.url, dataDir, plans['GET /api/patients/{id}'])
  await service.stop()

  const starts = await measureStarts(main.url)
  await rm(dataDir, { recursive: true, force: true })
  await report({
    ceilingA,
    ceilingB,
    ceilingBc,
    ceilingC,
    ceilingS,
    results,
    peak,
    growth,
    starts,
    twoInstances,
    upload,
    paired,
    before,
    seedSeconds: main.seedSeconds,
  })
}

/**
 * `--before-only`: the by-id read against another commit's and nothing else, printed rather than
 * recorded, for trying a change out in a few minutes.
 */
async function compareOnly(
  database: Awaited<ReturnType<typeof prepareDatabase>>,
  dataDir: string,
  service: Awaited<ReturnType<typeof startService>>,
): Promise<void> {
  if (!values.before) throw new Error('--before-only needs --before <commit>')
  try {
    const token = await login(service.url, database.seeded.email)
    const read = scenarios(service.url, token, database.seeded)['GET /api/patients/{id}']
    const pid = service.child.pid as number
    const before = await againstRevision(values.before, database.url, dataDir, read, pid, database.seeded)
    process.stdout.write(`\n${describeRevisions(before).join('\n')}\n`)
  } finally {
    await service.stop()
    await rm(dataDir, { recursive: true, force: true })
  }
}

/** This build's by-id read against another commit's, with the CPU time per request of each. */
type Revisions = {
  commit: string
  ratios: PairedRatios & { cpu?: { baseline: CpuPerRequest; scenario: CpuPerRequest } }
}

/**
 * The by-id read of this build paired round by round with the same read of another commit's build
 * (`--before`), both on the run's database: what a change cost, in one run on one machine.
 */
async function againstRevision(
  revision: string,
  databaseUrl: string,
  dataDir: string,
  read: Plan,
  service: number,
  seeded: Seeded,
): Promise<Revisions> {
  process.stdout.write(`  building ${revision} for the comparison\n`)
  const built = await buildRevision(path.resolve(dist, '..'), revision)
  try {
    const earlier = await startService(databaseUrl, dataDir, { build: built.dist })
    try {
      const token = await login(earlier.url, seeded.email)
      const earlierRead = { ...read, url: earlier.url, headers: { authorization: `Bearer ${token}` } }
      process.stdout.write(`  ${ROUNDS} paired rounds against ${built.commit}\n`)
      const servers = { baseline: earlier.child.pid as number, scenario: service }
      return { commit: built.commit, ratios: await pairedRatios(earlierRead, read, servers) }
    } finally {
      await earlier.stop()
    }
  } finally {
    await built.remove()
  }
}

interface Report {
  ceilingA: Measure
  ceilingB: Measure
  ceilingBc: Measure
  ceilingC: Measure
  ceilingS: Measure
  results: Record<string, Measure>
  peak: number
  growth: Growth | undefined
  starts: Starts
  twoInstances: Measure
  upload: { growthMb: number; statusCode: number }
  paired: {
    byId: PairedRatios
    byIdCoalesced: Awaited<ReturnType<typeof pairedRatios>>
    create: PairedRatios
    fhirRead: PairedRatios
    sortedPage: PairedRatios
  }
  before: Revisions | undefined
  seedSeconds: number
}

/** The CPU time per request of the by-id read and ceiling B′, from the same paired rounds. */
function describeCpu(
  cpu: { baseline: CpuPerRequest; scenario: CpuPerRequest } | undefined,
  baseline: string,
): string[] {
  if (!cpu) return []
  const of = (values: number[]) => `${median(values)} µs (${values.join(', ')})`
  const postgres = median(cpu.baseline.postgres) > 0
  return [
    `  - CPU time per request in those rounds, the median: the service ${of(cpu.scenario.server)}, ${baseline} ${of(cpu.baseline.server)}${postgres ? `; PostgreSQL while the service was driven ${of(cpu.scenario.postgres)}, while ${baseline} was ${of(cpu.baseline.postgres)}` : ' (PostgreSQL runs elsewhere: its share is not counted)'}`,
  ]
}

function describeRevisions(before: Revisions): string[] {
  return [
    `- GET /api/patients/{id} against the same read of ${before.commit} (built from that commit, on the same database), paired round by round: ${describeRatios(before.ratios.rps)} × its requests/s (target ≥ 0.90); p99 ${describeRatios(before.ratios.p99)} × its (target ≤ 2)`,
    ...describeCpu(before.ratios.cpu, before.commit),
  ]
}

async function report(run: Report): Promise<void> {
  const rows = [
    '| scenario | req/s | p50 ms | p99 ms | non-2xx | × ceiling B | × ceiling A |',
    '|---|---|---|---|---|---|---|',
    `| ceiling A: constant JSON | ${round(run.ceilingA.rps)} | ${run.ceilingA.p50} | ${run.ceilingA.p99} | ${run.ceilingA.non2xx} | | |`,
    `| ceiling B: primary-key SELECT | ${round(run.ceilingB.rps)} | ${run.ceilingB.p50} | ${run.ceilingB.p99} | ${run.ceilingB.non2xx} | | ${round(run.ceilingB.rps / run.ceilingA.rps, 2)} |`,
    `| ceiling B′: the same SELECTs, coalesced as the service does | ${round(run.ceilingBc.rps)} | ${run.ceilingBc.p50} | ${run.ceilingBc.p99} | ${run.ceilingBc.non2xx} | ${round(run.ceilingBc.rps / run.ceilingB.rps, 2)} | ${round(run.ceilingBc.rps / run.ceilingA.rps, 2)} |`,
    `| ceiling C: INSERT in a transaction | ${round(run.ceilingC.rps)} | ${run.ceilingC.p50} | ${run.ceilingC.p99} | ${run.ceilingC.non2xx} | | ${round(run.ceilingC.rps / run.ceilingA.rps, 2)} |`,
    `| ceiling S: the sorted page's two statements | ${round(run.ceilingS.rps)} | ${run.ceilingS.p50} | ${run.ceilingS.p99} | ${run.ceilingS.non2xx} | ${round(run.ceilingS.rps / run.ceilingB.rps, 2)} | ${round(run.ceilingS.rps / run.ceilingA.rps, 2)} |`,
    ...Object.entries(run.results).map(
      ([name, m]) =>
        `| ${name} | ${round(m.rps)} | ${m.p50} | ${m.p99} | ${m.non2xx} | ${round(m.rps / run.ceilingB.rps, 2)} | ${round(m.rps / run.ceilingA.rps, 2)} |`,
    ),
  ]
  const byId = run.results['GET /api/patients/{id}'] as Measure
  const targets = [
    `- GET /api/patients/{id}, median of ${ROUNDS} rounds each driving ceiling B then the service: ${describeRatios(run.paired.byId.rps)} × ceiling B's requests/s (target ≥ 0.80); p99 ${describeRatios(run.paired.byId.p99)} × ceiling B's (target ≤ 2)`,
    `- GET /api/patients/{id} against ceiling B′, which coalesces its lookups as the service does, so that the ratio shows what authentication (with revocation), the organization check, envelope, audit, metrics, logging and rate limiting (counted in Redis) cost: ${describeRatios(run.paired.byIdCoalesced.rps)} × ceiling B′'s requests/s (target ≥ 0.80); p99 ${describeRatios(run.paired.byIdCoalesced.p99)} × ceiling B′'s (target ≤ 2)`,
    ...describeCpu(run.paired.byIdCoalesced.cpu, 'ceiling B′'),
    ...(run.before ? describeRevisions(run.before) : []),
    `- GET /fhir/R4/Patient/{id} against GET /api/patients/{id} of the same patients, paired round by round: ${describeRatios(run.paired.fhirRead.rps)} × the REST read's requests/s (target ≥ 0.80)`,
    `- GET /api/patients (sorted page) against ceiling S, the same two statements on a bare route: ${describeRatios(run.paired.sortedPage.rps)} × ceiling S's requests/s (target ≥ 0.70)`,
    `- POST /api/patients, median of ${ROUNDS} rounds each driving ceiling C then the service: ${describeRatios(run.paired.create.rps)} × ceiling C's requests/s (target ≥ 0.75)`,
    `- Two instances on one database, ${CONNECTIONS} connections split between them, GET /api/patients/{id}: ${round(run.twoInstances.rps)} req/s, ${round(run.twoInstances.rps / byId.rps, 2)} × one instance (p99 ${run.twoInstances.p99} ms, non-2xx ${run.twoInstances.non2xx})`,
    `- Peak resident memory of the service: ${round(run.peak)} MB (target ≤ 200)`,
    `- A ${UPLOAD_MB} MB document upload (answered ${run.upload.statusCode}) raised resident memory by ${round(run.upload.growthMb)} MB (target < 30)`,
    `- First start to ready on a new data directory, embedded (${run.starts.fromTemplate ? 'from the prepared template' : 'no template prepared: initdb and every migration'}), the median of ${run.starts.first.length}: ${median(run.starts.first)} ms (${run.starts.first.join(', ')}) (target ≤ 5000)`,
    ...run.starts.cold.map(
      ({ version, pglite, postgres, pgliteMemory }, index) =>
        `- Cold start to ready on an existing database, on Node.js ${version} (${index === 0 ? "the benchmark's" : "the Docker image's"}), the median of ${pglite.length}: PGlite ${median(pglite)} ms (${pglite.join(', ')}) (target ≤ 1000), PostgreSQL ${median(postgres)} ms (${postgres.join(', ')}) (target ≤ 500); resident memory of the PGlite start ${describeStartMemory(pgliteMemory)}`,
    ),
    `- Seeding ${PATIENTS} patients: ${run.seedSeconds.toFixed(1)} s`,
  ]
  const growthRows = run.growth
    ? [
        '',
        `Cost growth with data (${PATIENTS} → ${run.growth.size} patients, the larger seeded in ${run.growth.seedSeconds.toFixed(1)} s): the median of ${ROUNDS} rounds, each driving the scenario on the smaller database and then on the larger, before any scenario wrote to either (target for p50 latency ≤ 3×):`,
        '',
        `The seed gives every first name (${FIRST_NAMES.length}) and last name (${LAST_NAMES.length}) alike, so the list filter \`lastName=Kowalski\` matches 1 patient in ${LAST_NAMES.length} and the search \`q=kowalski olga\` 1 in ${(FIRST_NAMES.length * LAST_NAMES.length).toLocaleString('en')}; both are counted exactly.`,
        '',
        '| scenario | p50 latency, larger ÷ smaller | requests/s, larger ÷ smaller |',
        '|---|---|---|',
        ...Object.entries(run.growth.ratios).map(
          ([name, ratios]) => `| ${name} | ${describeRatios(ratios.p50)} | ${describeRatios(ratios.rps)} |`,
        ),
      ]
    : []
  // A scenario fails on any non-2xx answer, and on none at all (every request outlasting the run).
  const failures = Object.entries({ ...run.results, 'two instances': run.twoInstances })
    .filter(([, m]) => m.non2xx > 0 || m.total === 0)
    .map(([name]) => name)
  if (run.upload.statusCode !== 201) failures.push(`${UPLOAD_MB} MB upload`)
  const options = [
    values.compare ? ` --compare ${values.compare}` : '',
    values.before ? ` --before ${run.before?.commit}` : '',
    values['api-only'] ? ' --api-only' : '',
  ].join('')
  const command = `npm run bench -- --patients ${PATIENTS}${options} --seconds ${SECONDS} --connections ${CONNECTIONS} --rounds ${ROUNDS}`
  const section = [
    '## API (npm run bench)',
    '',
    `\`${command}\` — ${new Date().toISOString().slice(0, 10)}, Node ${process.version}, ${CONNECTIONS} connections, ${SECONDS} s per scenario after 3 s of warm-up; PostgreSQL at BENCH_DATABASE_URL; machine load average ${loadAtStart} at the start, ${loadavg()[0]?.toFixed(1)} at the end.`,
    '',
    ...rows,
    '',
    ...targets,
    ...growthRows,
    '',
  ].join('\n')
  process.stdout.write(`\n${section}\n`)
  await writeBenchmarkSection('API (npm run bench)', section)
  if (failures.length > 0) {
    process.stderr.write(`Non-2xx or no responses in: ${failures.join(', ')}\n`)
    process.exitCode = 1
  }
}

/**
 * The benchmarks with sections of their own (sync paging on a million patients, the change feed,
 * the FHIR Observation search, a bulk export of a million patients, read replicas) run after this one, with their
 * defaults, on the same server.
 */
async function runOtherBenchmarks(): Promise<void> {
  for (const command of ['bench:sync', 'bench:change-feed', 'bench:fhir', 'bench:export', 'bench:replicas']) {
    const code = await new Promise<number | null>((resolve) =>
      spawn('npm', ['run', '-s', command], {
        stdio: 'inherit',
        env: { ...process.env, BENCH_DATABASE_URL: adminUrl, DATABASE_URL: adminUrl },
      }).on('exit', resolve),
    )
    if (code !== 0) process.exitCode = 1
  }
}

main()
  .then(() => (values['api-only'] || values['before-only'] ? undefined : runOtherBenchmarks()))
  .catch((error: unknown) => {
    process.stderr.write(`${(error as Error).stack}\n`)
    process.exit(1)
  })
