import { spawn } from 'node:child_process'
import { mkdtemp, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { prepareTemplate } from '../../db/embedded-template.js'
import { startServer as startProcess, stopServer } from '../helpers/servers/server-process.js'

const serverEntry = path.resolve('src/server.ts')

/** Starts the real entry point on a data directory of its own. */
const startServer = (dataDir: string, env: Record<string, string> = {}) =>
  startProcess({ DATA_DIR: dataDir, ...env })
const stop = stopServer

async function login(baseUrl: string, username: string, password: string) {
  const response = await fetch(`${baseUrl}/api/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username, password }),
  })
  return { status: response.status, body: (await response.json()) as { data: { token: string } } }
}

let dataDir: string

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(tmpdir(), 'ehr-server-'))
  // As `npm ci` leaves it (the prepare script); the start without one: tests/database/embedded-template.test.ts.
  await prepareTemplate()
})
afterAll(async () => {
  await rm(dataDir, { recursive: true, force: true })
})

// Real processes: initdb of a new embedded database and several starts take a while on a busy machine.
const PROCESS_TEST_TIMEOUT_MS = 120_000

describe('the server process', () => {
  it(
    'bootstraps an admin on an empty database, persists data and shuts down cleanly',
    async () => {
      // Audit records are written only at shutdown in this run: none must be lost on SIGTERM.
      const first = await startServer(dataDir, { AUDIT_FLUSH_INTERVAL_MS: '60000' })
      const printed = first.output().match(/Bootstrap administrator created: admin@example\.com \/ (\S+)/)
      expect(printed?.[1]).toBeTruthy()
      // A line per step of a first start, in order, each as it begins; the template is migrated.
      const steps = [
        /"creating the embedded database in [^"]+ from its prepared template \(first start only\)"/,
        /"creating the administrator account"/,
        /Bootstrap administrator created/,
      ].map((step) => first.output().search(step))
      expect(
        steps.every((at) => at >= 0),
        String(steps),
      ).toBe(true)
      expect([...steps].sort((a, b) => a - b)).toEqual(steps)
      expect(first.output()).not.toMatch(/"applying database migrations"/)
      expect(first.output()).not.toContain('WEBHOOK_ALLOW_PRIVATE_TARGETS')
      expect(first.output()).toMatch(/Explorer +http:\/\/localhost:\d+\/swagger-ui\.html/)
      expect(first.output()).toMatch(/Metrics +http:\/\/localhost:\d+\/actuator\/prometheus/)
      // Without ENCRYPTION_KEY the embedded default keeps a generated key beside its data.
      expect((await stat(path.join(dataDir, 'encryption.key'))).mode & 0o777).toBe(0o600)
      const password = printed?.[1] as string
      const session = await login(first.baseUrl, 'admin@example.com', password)
      expect(session.status).toBe(200)
      const created = await fetch(`${first.baseUrl}/api/patients`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${session.body.data.token}` },
        body: JSON.stringify({
          identification: {
            firstName: 'Persisted',
            lastName: 'Patient',
            dateOfBirth: '1960-06-06',
            gender: 'Other',
          },
        }),
      })
      expect(created.status).toBe(201)
      const patientId = ((await created.json()) as { data: { id: number } }).data.id
      const rival = await startServer(dataDir).then(
        () => 'started',
        (error: Error) => error.message,
      )
      expect(rival).toMatch(/server exited with 1[\s\S]*is in use by process/)
      expect(await stop(first)).toBe(0)
      expect(first.output()).not.toContain('Persisted')

      const second = await startServer(dataDir)
      expect(second.output()).not.toContain('Bootstrap administrator created')
      expect(second.output()).toMatch(/"opening the embedded database in [^"]+"/)
      expect(second.output()).not.toMatch(/"applying database migrations"|"creating the/)
      expect(second.output()).not.toContain('swagger-ui.html')
      const again = await login(second.baseUrl, 'admin@example.com', password)
      expect(again.status).toBe(200)
      const read = await fetch(`${second.baseUrl}/api/patients/${patientId}`, {
        headers: { authorization: `Bearer ${again.body.data.token}` },
      })
      expect(read.status).toBe(200)
      expect(
        ((await read.json()) as { data: { identification: { firstName: string } } }).data.identification
          .firstName,
      ).toBe('Persisted')
      const audit = await fetch(
        `${second.baseUrl}/api/audit-events?patientId=${patientId}&sort=occurredAt,asc`,
        {
          headers: { authorization: `Bearer ${again.body.data.token}` },
        },
      )
      expect(audit.status).toBe(200)
      const trail = (
        (await audit.json()) as { data: { content: { action: string; resourceIds: number[] }[] } }
      ).data.content
      expect(trail[0]).toMatchObject({ action: 'CREATE', resourceIds: [patientId] })
      expect(await stop(second, 'SIGINT')).toBe(0)
    },
    PROCESS_TEST_TIMEOUT_MS,
  )

  it(
    'warns once at start that WEBHOOK_ALLOW_PRIVATE_TARGETS=true lets webhooks reach internal addresses',
    async () => {
      const server = await startServer(dataDir, { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' })
      const warnings = server
        .output()
        .split('\n')
        .filter((line) => line.includes('WEBHOOK_ALLOW_PRIVATE_TARGETS'))
      expect(await stop(server)).toBe(0)
      expect(warnings).toHaveLength(1)
      expect(JSON.parse(warnings[0] as string)).toMatchObject({
        level: 40,
        msg: expect.stringMatching(/^WEBHOOK_ALLOW_PRIVATE_TARGETS=true: .*development and tests only/),
      })
    },
    PROCESS_TEST_TIMEOUT_MS,
  )

  it(
    'refuses to start on a bad setting and names it',
    async () => {
      const child = spawn(process.execPath, ['--import', 'tsx', serverEntry], {
        env: { PATH: process.env.PATH, PORT: 'eighty', DATA_DIR: dataDir },
        stdio: ['ignore', 'pipe', 'pipe'],
      })
      let stderr = ''
      child.stderr.on('data', (chunk) => {
        stderr += chunk
      })
      const code = await new Promise<number | null>((resolve) => child.once('exit', resolve))
      expect(code).toBe(1)
      expect(stderr).toContain('PORT: Expected integer')
    },
    PROCESS_TEST_TIMEOUT_MS,
  )

  it(
    'refuses to start on PostgreSQL naming at once each setting it requires: ENCRYPTION_KEY and a mail transport',
    async () => {
      const child = spawn(process.execPath, ['--import', 'tsx', serverEntry], {
        env: { PATH: process.env.PATH, DATABASE_URL: 'postgres://127.0.0.1:1/none', DATA_DIR: dataDir },
        stdio: ['ignore', 'pipe', 'pipe'],
      })
      let stderr = ''
      child.stderr.on('data', (chunk) => {
        stderr += chunk
      })
      const code = await new Promise<number | null>((resolve) => child.once('exit', resolve))
      expect(code).toBe(1)
      expect(stderr).toContain('ENCRYPTION_KEY: required when DATABASE_URL is set')
      expect(stderr).toContain('SMTP_URL: required when DATABASE_URL is set')
    },
    PROCESS_TEST_TIMEOUT_MS,
  )
})
