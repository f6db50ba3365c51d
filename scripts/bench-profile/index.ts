import { readFileSync } from 'node:fs'
import { copyFile, mkdtemp, readdir, readFile, rm } from 'node:fs/promises'
import { SourceMap } from 'node:module'
import { loadavg, tmpdir } from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import type { LoadPlan } from '../bench/load.js'
import { runJson } from '../bench/processes.js'
import { buildRevision } from '../bench/revision.js'
import { CREATED_PATIENT } from '../bench/seed.js'
import { dist, login, prepareDatabase, script, startService } from '../bench/service.js'
import { writeBenchmarkSection } from '../lib/benchmarks-file.js'

/**
 * Where a hot route spends its time: the service (production bundle, PostgreSQL, Redis rate limits)
 * under `node --cpu-prof` while autocannon drives GET /api/patients/{id} (or, with `--route
 * sorted-page`, the first page of 20 patients by last name; with `--route create`, POST
 * /api/patients), and the profile's
 * self time summed per function and per package, mapped back to the sources through the bundle's
 * source map. `--label` names the section, so a before and an after stand side by side; `--revision`
 * profiles another commit's build on the same seeded database.
 */
const { values } = parseArgs({
  options: {
    label: { type: 'string', default: 'latest' },
    // `by-id` (GET /api/patients/{id}), `sorted-page` (GET /api/patients, 20 by last name) or
    // `create` (POST /api/patients).
    route: { type: 'string', default: 'by-id' },
    patients: { type: 'string', default: '100000' },
    seconds: { type: 'string', default: '10' },
    connections: { type: 'string', default: '50' },
    top: { type: 'string', default: '20' },
    // Where to keep the raw profile (for Chrome DevTools' Performance panel); by default it is dropped.
    save: { type: 'string' },
    // Another commit's build to profile instead of this checkout's (bench/revision.ts), for a before.
    revision: { type: 'string' },
  },
})

interface ProfileNode {
  id: number
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number }
}
interface CpuProfile {
  nodes: ProfileNode[]
  samples: number[]
  timeDeltas: number[]
}

const ROUTES: Record<
  string,
  { title: string; method: 'GET' | 'POST'; path: string; byId?: true; body?: string }
> = {
  'by-id': { title: 'GET /api/patients/{id}', method: 'GET', path: '/api/patients/{id}', byId: true },
  'sorted-page': {
    title: 'GET /api/patients (sorted page)',
    method: 'GET',
    path: '/api/patients?size=20&sort=lastName,asc',
  },
  create: { title: 'POST /api/patients', method: 'POST', path: '/api/patients', body: CREATED_PATIENT },
}
function chosenRoute() {
  const chosen = ROUTES[values.route]
  if (!chosen) throw new Error(`--route must be one of ${Object.keys(ROUTES).join(', ')}`)
  return chosen
}
const route = chosenRoute()

const PSEUDO_FRAMES = new Set(['(root)', '(program)', '(idle)', '(garbage collector)'])
const projectRoot = path.resolve(dist, '..')

/** `node_modules/<package>`, the project's top-level folder, or where V8 and Node keep their own code. */
function areaOf(source: string): string {
  if (source === '') return '(V8 and native)'
  if (source.startsWith('node:')) return 'node: built-ins'
  const inModules = source.match(/node_modules\/((?:@[^/]+\/)?[^/]+)/)
  if (inModules) return inModules[1] as string
  const [top, second] = source.split('/')
  return second ? `${top}/${second.endsWith('.ts') ? '' : second}`.replace(/\/$/, '') : (top as string)
}

/** The source map beside each file of the bundle (`server.mjs` and its chunks), read on first use. */
function bundleMaps(build: string): (url: string) => SourceMap | undefined {
  const maps = new Map<string, SourceMap | undefined>()
  return (url) => {
    if (!url.startsWith(`file://${build}/`)) return undefined
    if (!maps.has(url)) {
      try {
        maps.set(url, new SourceMap(JSON.parse(readFileSync(`${fileURLToPath(url)}.map`, 'utf8'))))
      } catch {
        maps.set(url, undefined)
      }
    }
    return maps.get(url)
  }
}

function sourceLocator(mapOf: (url: string) => SourceMap | undefined, root: string) {
  return (frame: ProfileNode['callFrame']): { source: string; line: number } => {
    const map = mapOf(frame.url)
    if (map) {
      const entry = map.findEntry(frame.lineNumber, frame.columnNumber) as {
        originalSource?: string
        originalLine?: number
      }
      if (entry.originalSource) {
        const file = entry.originalSource.startsWith('file://')
          ? fileURLToPath(entry.originalSource)
          : path.resolve(path.dirname(fileURLToPath(frame.url)), entry.originalSource)
        return { source: path.relative(root, file), line: (entry.originalLine ?? 0) + 1 }
      }
    }
    const url = frame.url.replace('file://', '')
    const source = url.startsWith('/') ? path.relative(root, url) : url
    return { source, line: frame.lineNumber + 1 }
  }
}

interface Summary {
  busyMs: number
  idleMs: number
  frames: [string, number][]
  areas: [string, number][]
}

function summarise(profile: CpuProfile, locate: ReturnType<typeof sourceLocator>): Summary {
  const byNode = new Map(profile.nodes.map((node) => [node.id, node]))
  const selfMs = new Map<number, number>()
  profile.samples.forEach((id, index) => {
    selfMs.set(id, (selfMs.get(id) ?? 0) + (profile.timeDeltas[index] ?? 0) / 1000)
  })
  const frames = new Map<string, number>()
  const areas = new Map<string, number>()
  let idleMs = 0
  let busyMs = 0
  for (const [id, ms] of selfMs) {
    const frame = (byNode.get(id) as ProfileNode).callFrame
    if (frame.functionName === '(idle)') {
      idleMs += ms
      continue
    }
    busyMs += ms
    const pseudo = PSEUDO_FRAMES.has(frame.functionName)
    const { source, line } = pseudo ? { source: '', line: 0 } : locate(frame)
    const name = `${frame.functionName || '(anonymous)'}${source ? ` — ${source}:${line}` : ''}`
    frames.set(name, (frames.get(name) ?? 0) + ms)
    const area = pseudo ? frame.functionName : areaOf(source)
    areas.set(area, (areas.get(area) ?? 0) + ms)
  }
  const sorted = (map: Map<string, number>) => [...map].sort((a, b) => b[1] - a[1])
  return { busyMs, idleMs, frames: sorted(frames), areas: sorted(areas) }
}

async function main(): Promise<void> {
  const loadAtStart = loadavg()[0]?.toFixed(1)
  process.stdout.write(`Seeding ${values.patients} patients…\n`)
  const database = await prepareDatabase(Number(values.patients))
  const dataDir = await mkdtemp(path.join(tmpdir(), 'ehr-profile-'))
  const profileDir = path.join(dataDir, 'profile')
  const revision = values.revision ? await buildRevision(projectRoot, values.revision) : undefined
  const build = revision?.dist ?? dist
  try {
    const service = await startService(database.url, dataDir, {
      nodeOptions: ['--cpu-prof', `--cpu-prof-dir=${profileDir}`],
      build,
    })
    const token = await login(service.url, database.seeded.email)
    const plan: LoadPlan = {
      url: service.url,
      method: route.method,
      path: route.path,
      ...(route.byId && { idRange: [database.seeded.firstPatientId, database.seeded.lastPatientId] }),
      ...(route.body && { body: route.body }),
      headers: { authorization: `Bearer ${token}` },
      connections: Number(values.connections),
      warmupSeconds: 3,
      seconds: Number(values.seconds),
    }
    process.stdout.write(`Driving ${route.title} under the profiler…\n`)
    const measured = await runJson<{ rps: number; non2xx: number }>([
      script('scripts/bench/load.js'),
      JSON.stringify(plan),
    ])
    await service.stop()
    if (measured.non2xx > 0) throw new Error(`${measured.non2xx} non-2xx answers while profiling`)
    const [file] = (await readdir(profileDir)).filter((name) => name.endsWith('.cpuprofile'))
    if (!file) throw new Error('the service wrote no CPU profile')
    if (values.save) await copyFile(path.join(profileDir, file), values.save)
    const profile = JSON.parse(await readFile(path.join(profileDir, file), 'utf8')) as CpuProfile
    const summary = summarise(profile, sourceLocator(bundleMaps(build), path.resolve(build, '..')))
    await report(summary, measured.rps, loadAtStart)
  } finally {
    await revision?.remove()
    await rm(dataDir, { recursive: true, force: true })
  }
}

const percent = (ms: number, of: number) => `${((100 * ms) / of).toFixed(1)} %`

async function report(summary: Summary, rps: number, loadAtStart: string | undefined): Promise<void> {
  const top = Number(values.top)
  const heading = `CPU profile: ${route.title} (${values.label})`
  const section = [
    `## ${heading}`,
    '',
    `\`npm run bench:profile -- --route ${values.route} --label "${values.label}" --patients ${values.patients} --seconds ${values.seconds} --connections ${values.connections}${values.revision ? ` --revision ${values.revision}` : ''}\` — ${new Date().toISOString().slice(0, 10)}, Node ${process.version}; the production bundle on PostgreSQL with rate limits counted in Redis, under \`node --cpu-prof\`, ${values.connections} connections for ${values.seconds} s after 3 s of warm-up (${Math.round(rps)} req/s while profiled); machine load average ${loadAtStart} at the start. Self time is the time a function ran its own code (not its callees'), as a share of the service's busy time (${Math.round(summary.busyMs)} ms busy, ${Math.round(summary.idleMs)} ms idle).`,
    '',
    '| where | self time |',
    '|---|---|',
    ...summary.areas.slice(0, top).map(([area, ms]) => `| ${area} | ${percent(ms, summary.busyMs)} |`),
    '',
    '| function — source | self time |',
    '|---|---|',
    ...summary.frames
      .slice(0, top)
      .map(([name, ms]) => `| ${name.replaceAll('|', '\\|')} | ${percent(ms, summary.busyMs)} |`),
    '',
  ].join('\n')
  process.stdout.write(`\n${section}\n`)
  await writeBenchmarkSection(heading, section)
}

main().catch((error: unknown) => {
  process.stderr.write(`${(error as Error).stack}\n`)
  process.exit(1)
})
