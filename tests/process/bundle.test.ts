import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { bundleServer, ON_DEMAND } from '../../scripts/bundle/index.js'
import { startServer, stopServer } from '../helpers/server-process.js'

let bundleDir: string
let dataDir: string

beforeAll(async () => {
  // Inside the project, so that the packages left out of the bundle resolve from node_modules.
  await mkdir('.test-results', { recursive: true })
  bundleDir = await mkdtemp(path.resolve('.test-results', 'bundle-'))
  dataDir = await mkdtemp(path.join(tmpdir(), 'ehr-bundle-'))
})
afterAll(async () => {
  await rm(bundleDir, { recursive: true, force: true })
  await rm(dataDir, { recursive: true, force: true })
})

describe('the production bundle (npm run build, npm run start:prod)', () => {
  it('starts on the embedded database and serves the API, its document and the explorer', async () => {
    const file = path.join(bundleDir, 'server.mjs')
    await bundleServer(file)
    // Packages a setting asks for are imported when it does, not on every start.
    const staticImports = [...(await readFile(file, 'utf8')).matchAll(/^import .* from "([^"]+)";$/gm)]
    const onDemand = (name: string) =>
      ON_DEMAND.some((pattern) =>
        pattern.endsWith('/*') ? name.startsWith(pattern.slice(0, -1)) : name === pattern,
      )
    expect(staticImports.map(([, name]) => name).filter((name) => onDemand(name as string))).toEqual([])
    expect(staticImports.length).toBeGreaterThan(0)
    const server = await startServer({ DATA_DIR: dataDir, NODE_ENV: 'production' }, [file])
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
    // Bundles the whole service with esbuild, then starts it as a process.
  }, 120_000)
})
