import { spawn } from 'node:child_process'
import { mkdir, mkdtemp, readdir, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { bundleCli, bundleServer } from '../../scripts/bundle/index.js'
import { startServer, stopServer } from '../helpers/servers/server-process.js'

let bundleDir: string
let dataDir: string

beforeAll(async () => {
  // Inside the project, so that the packages left out of the bundle resolve from node_modules.
  await mkdir('.test-results', { recursive: true })
  bundleDir = await mkdtemp(path.resolve('.test-results', 'cli-'))
  dataDir = await mkdtemp(path.join(tmpdir(), 'ehr-cli-'))
  await bundleCli(bundleDir)
  await bundleServer(bundleDir)
}, 120_000)
afterAll(async () => {
  await rm(bundleDir, { recursive: true, force: true })
  await rm(dataDir, { recursive: true, force: true })
})

interface Run {
  code: number | null
  stdout: string
  stderr: string
}

/** `node dist/cli.mjs …` as in the Docker image: plain node, no tsx, the environment alone. */
function cli(...args: string[]): Promise<Run> {
  const child = spawn(process.execPath, [path.join(bundleDir, 'cli.mjs'), ...args], {
    env: { PATH: process.env.PATH, NODE_ENV: 'production', DATA_DIR: dataDir },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk) => {
    stdout += chunk
  })
  child.stderr.on('data', (chunk) => {
    stderr += chunk
  })
  return new Promise((resolve, reject) => {
    child.once('error', reject)
    child.once('close', (code) => resolve({ code, stdout, stderr }))
  })
}

const ORG = '/practices/cli-test'

// Real processes on a new embedded database (initdb), and a server start: slow on a busy machine.
const TIMEOUT_MS = 180_000

describe('the bundled CLI (dist/cli.mjs, the Docker image’s operator commands)', () => {
  it('needs neither tsx nor the TypeScript sources', async () => {
    const files = (await readdir(bundleDir, { recursive: true })).filter((file) => file.endsWith('.mjs'))
    expect(files).toContain('cli.mjs')
    for (const file of files) {
      const bundled = await readFile(path.join(bundleDir, file), 'utf8')
      expect(bundled, file).not.toMatch(/from ["']tsx/)
      // A TypeScript source imported at run time (JSDoc type imports of declaration files aside).
      expect(bundled, file).not.toMatch(/import\(["'][^"']*(?<!\.d)\.ts["']\)/)
    }
    const help = await cli('help')
    expect(help.code).toBe(0)
    for (const command of ['user', 'seed', 'migrate', 'keys']) expect(help.stdout).toContain(command)
    const unknown = await cli('frobnicate')
    expect(unknown.code).toBe(2)
    expect(unknown.stderr).toContain('Unknown command: frobnicate')
  })

  it(
    'runs seed and user commands on the embedded database, and refuses in one line while the server holds it',
    async () => {
      const seeded = await cli('seed', '--patients', '5')
      expect(seeded.stderr).toBe('')
      expect(seeded.code).toBe(0)
      expect(seeded.stdout).toMatch(/Bootstrap administrator created: admin@example\.com \/ \S+/)
      expect(seeded.stdout).toMatch(/Demo practice seeded in organization \d+/)
      expect(seeded.stdout).toMatch(/patients: 5/)

      const org = await cli('user', 'org', 'create', '--name', 'CLI Practice', '--group', ORG)
      expect(org.code, org.stderr).toBe(0)
      expect(org.stdout).toMatch(new RegExp(`^Created organization \\d+ ${ORG}$`, 'm'))
      const created = await cli(
        'user',
        'create',
        '--org',
        ORG,
        '--email',
        'desk@cli.example',
        '--first',
        'Frank',
        '--last',
        'Desk',
        '--roles',
        'FRONT_DESK',
      )
      expect(created.code, created.stderr).toBe(0)
      const password = created.stdout.match(/Generated password \(shown only now\): (\S+)/)?.[1]
      expect(password).toBeTruthy()
      const listed = await cli('user', 'list', '--org', ORG)
      expect(listed.code).toBe(0)
      expect(listed.stdout).toMatch(/^\d+\tdesk@cli\.example\tFRONT_DESK\tactive$/m)
      const usage = await cli('user', 'create', '--org', ORG)
      expect(usage.code).toBe(2)
      expect((await cli('migrate')).stdout).toContain('already up to date')

      const server = await startServer({ DATA_DIR: dataDir, NODE_ENV: 'production' }, [
        path.join(bundleDir, 'server.mjs'),
      ])
      try {
        // The account the CLI made signs in on the server it made it for: temporary password, 403.
        const login = await fetch(`${server.baseUrl}/api/auth/login`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ username: 'desk@cli.example', password }),
        })
        expect(login.status).toBe(403)
        expect(await login.json()).toMatchObject({
          error: { code: 'AUTH_004' },
          data: { requiresPasswordChange: true },
        })

        for (const args of [
          ['user', 'list', '--org', ORG],
          ['seed', '--patients', '5'],
          ['keys', 'rotate'],
          ['migrate'],
        ]) {
          const refused = await cli(...args)
          expect(refused.code, args.join(' ')).toBe(1)
          expect(refused.stdout, args.join(' ')).toBe('')
          const lines = refused.stderr.trimEnd().split('\n')
          expect(lines, args.join(' ')).toHaveLength(1)
          expect(lines[0]).toMatch(
            new RegExp(
              `^The embedded database in .+ is in use by process ${server.child.pid}.*stop it first`,
            ),
          )
          expect(refused.stderr).not.toMatch(/^\s+at /m)
        }
      } finally {
        expect(await stopServer(server)).toBe(0)
      }

      const after = await cli('user', 'list', '--org', ORG)
      expect(after.code, after.stderr).toBe(0)
      expect(after.stdout).toContain('desk@cli.example')
    },
    TIMEOUT_MS,
  )
})
