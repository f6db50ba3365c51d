import { execFile } from 'node:child_process'
import { mkdir, mkdtemp, readdir, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import { promisify } from 'node:util'
import type { Metafile } from 'esbuild'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { bundleServer, ON_DEMAND } from '../../scripts/bundle/index.js'
import { startServer, stopServer } from '../helpers/servers/server-process.js'

let bundleDir: string
let dataDir: string
let metafile: Metafile

beforeAll(async () => {
  // Inside the project, so that the packages left out of the bundle resolve from node_modules.
  await mkdir('.test-results', { recursive: true })
  bundleDir = await mkdtemp(path.resolve('.test-results', 'bundle-'))
  dataDir = await mkdtemp(path.join(tmpdir(), 'ehr-bundle-'))
  metafile = await bundleServer(bundleDir)
}, 120_000)
afterAll(async () => {
  await rm(bundleDir, { recursive: true, force: true })
  await rm(dataDir, { recursive: true, force: true })
})

const outputFor = (source: string) =>
  Object.entries(metafile.outputs).find(([, output]) => output.entryPoint === source)?.[0]

/** The files every start reads: the entry, the service it imports, and what they import statically. */
function readOnEveryStart(): string[] {
  const read = new Set<string>()
  const visit = (file: string) => {
    if (read.has(file)) return
    read.add(file)
    for (const imported of metafile.outputs[file]?.imports ?? []) {
      if (!imported.external && imported.kind === 'import-statement') visit(imported.path)
    }
  }
  visit(outputFor('src/server.ts') as string)
  visit(outputFor('src/start.ts') as string)
  return [...read]
}

const onDemand = (name: string) =>
  ON_DEMAND.some((pattern) =>
    pattern.endsWith('/*') ? name.startsWith(pattern.slice(0, -1)) : name === pattern,
  )
const packageOf = (input: string) => input.match(/node_modules\/((?:@[^/]+\/)?[^/]+)\//)?.[1]

describe('the production bundle (npm run build, npm run start:prod)', () => {
  it('starts on the embedded database and serves the API, its document and the explorer', async () => {
    const server = await startServer({ DATA_DIR: dataDir, NODE_ENV: 'production' }, [
      path.join(bundleDir, 'server.mjs'),
    ])
    try {
      const readiness = await fetch(`${server.baseUrl}/actuator/health/readiness`)
      expect(readiness.status).toBe(200)
      const document = (await (await fetch(`${server.baseUrl}/v3/api-docs`)).json()) as { paths: object }
      expect(Object.keys(document.paths)).toContain('/api/patients/{id}')
      expect((await fetch(`${server.baseUrl}/swagger-ui.html`)).status).toBe(200)
      const unauthenticated = await fetch(`${server.baseUrl}/api/patients/1`)
      expect(unauthenticated.status).toBe(401)
    } finally {
      expect(await stopServer(server)).toBe(0)
    }
  }, 120_000)

  it('keeps what V8 compiled for the next start, where Node.js offers a compile cache (22 and later)', async () => {
    const temporary = await mkdtemp(path.join(dataDir, 'tmp-'))
    const server = await startServer({ DATA_DIR: dataDir, NODE_ENV: 'production', TMPDIR: temporary }, [
      path.join(bundleDir, 'server.mjs'),
    ])
    expect(await stopServer(server)).toBe(0)
    const cached = await readdir(path.join(temporary, 'node-compile-cache'), { recursive: true }).catch(
      () => [],
    )
    const offered = Number(process.versions.node.split('.')[0]) >= 22
    if (offered) expect(cached.length).toBeGreaterThan(0)
    else expect(cached).toEqual([])
  }, 120_000)
})

describe('what a start reads', () => {
  it('leaves out the packages only some settings need, bundled or not', () => {
    const files = readOnEveryStart()
    expect(files.length).toBeGreaterThan(1)
    const bundled = files.flatMap((file) => Object.keys(metafile.outputs[file]?.inputs ?? {}))
    expect(bundled.length).toBeGreaterThan(1000)
    expect(bundled.map(packageOf).filter((name) => name && onDemand(name))).toEqual([])
    const imported = files.flatMap((file) =>
      (metafile.outputs[file]?.imports ?? []).filter(
        (entry) => entry.external && entry.kind === 'import-statement',
      ),
    )
    expect(imported.map((entry) => entry.path).filter(onDemand)).toEqual([])
    // On Node.js 22 and later, an ES import of node:http loads Node's bundled undici too (src/http/status-codes.ts).
    expect(imported.map((entry) => entry.path)).not.toContain('node:http')
  })

  it('has a chunk of its own for each on-demand package, offering what the service takes from it', async () => {
    const load = async (source: string) => {
      const file = outputFor(source)
      expect(file, source).toBeDefined()
      expect(readOnEveryStart()).not.toContain(file)
      return (await import(path.resolve(file as string))) as Record<string, unknown>
    }
    const redis = await load('src/runtime/on-demand/ioredis.ts')
    expect(typeof redis.Redis).toBe('function')
    const undici = await load('src/runtime/on-demand/undici.ts')
    expect([typeof undici.Agent, typeof undici.request, typeof undici.buildConnector]).toEqual([
      'function',
      'function',
      'function',
    ])
    const mail = await load('src/runtime/on-demand/nodemailer.ts')
    expect(typeof mail.createTransport).toBe('function')
    const postgres = await load('db/postgres.ts')
    expect(typeof postgres.openPostgres).toBe('function')
  })

  it("reads pg without loading Node's fetch implementation (pg's test for Cloudflare Workers would)", async () => {
    const postgres = pathToFileURL(path.resolve(outputFor('db/postgres.ts') as string)).href
    const { stdout } = await promisify(execFile)(process.execPath, [
      '--input-type=module',
      '-e',
      `const { openPostgres } = await import(${JSON.stringify(postgres)})
      process.stdout.write(JSON.stringify({ loaded: typeof openPostgres, fetch: process.moduleLoadList.filter((name) => name.includes('undici')) }))`,
    ])
    expect(JSON.parse(stdout)).toEqual({ loaded: 'function', fetch: [] })
  })
})
