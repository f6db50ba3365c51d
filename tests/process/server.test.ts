import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

interface RunningServer {
  child: ChildProcess
  output: () => string
  baseUrl: string
}

const serverEntry = path.resolve('src/server.ts')

/** Starts the real entry point as `npm start` does, on loopback and an ephemeral port. */
async function startServer(dataDir: string, env: Record<string, string> = {}): Promise<RunningServer> {
  const child = spawn(process.execPath, ['--import', 'tsx', serverEntry], {
    env: {
      PATH: process.env.PATH,
      HOST: '127.0.0.1',
      PORT: '0',
      DATA_DIR: dataDir,
      LOG_LEVEL: 'info',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  child.stdout?.on('data', (chunk) => {
    output += chunk
  })
  child.stderr?.on('data', (chunk) => {
    output += chunk
  })
  const baseUrl = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${output}`)), 45_000)
    const poll = setInterval(() => {
      const match = output.match(/Server listening at (http:\/\/127\.0\.0\.1:\d+)/)
      if (match?.[1]) {
        clearInterval(poll)
        clearTimeout(timer)
        resolve(match[1])
      }
    }, 50)
    child.once('exit', (code) => {
      clearInterval(poll)
      clearTimeout(timer)
      reject(new Error(`server exited with ${code}:\n${output}`))
    })
  })
  return { child, output: () => output, baseUrl }
}

function stop(server: RunningServer, signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
  return new Promise((resolve) => {
    server.child.once('exit', (code) => resolve(code))
    server.child.kill(signal)
  })
}

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
      const first = await startServer(dataDir)
      const printed = first.output().match(/Bootstrap administrator created: admin@example\.com \/ (\S+)/)
      expect(printed?.[1]).toBeTruthy()
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
      expect(await stop(second, 'SIGINT')).toBe(0)
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
})
