import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { prepareTemplate } from '../../db/embedded-template.js'

let dataDir: string
const leftovers = new Set<number>()

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(tmpdir(), 'ehr-npm-start-'))
  await prepareTemplate()
})
afterEach(() => {
  // A server that outlived its npm must not outlive the test too.
  for (const pid of leftovers) {
    if (isRunning(pid)) process.kill(pid, 'SIGKILL')
  }
  leftovers.clear()
})
afterAll(async () => {
  await rm(dataDir, { recursive: true, force: true })
})

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/** Polls `check` every 50 ms until it holds or `ms` have passed; returns whether it held. */
async function eventually(check: () => boolean | Promise<boolean>, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms
  while (Date.now() < deadline) {
    if (await check()) return true
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  return check()
}

const answers = (url: string) =>
  fetch(`${url}/actuator/health/liveness`, { signal: AbortSignal.timeout(2000) }).then(
    (response) => response.ok,
    () => false,
  )

/** `npm start` as a newcomer runs it: every address (the default HOST), a port of the system's choice. */
async function npmStart(): Promise<{
  npm: ChildProcess
  output: () => string
  url: string
  serverPid: number
}> {
  const npm = spawn('npm', ['start'], {
    env: { PATH: process.env.PATH, HOME: process.env.HOME, PORT: '0', DATA_DIR: dataDir, LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  if (npm.pid) leftovers.add(npm.pid)
  let output = ''
  npm.stdout?.on('data', (chunk) => {
    output += chunk
  })
  npm.stderr?.on('data', (chunk) => {
    output += chunk
  })
  const listening = () => output.match(/"pid":(\d+)[^\n]*Server listening at (http:\/\/localhost:(\d+))/)
  const started = await eventually(() => listening() !== null || npm.exitCode !== null, 60_000)
  const match = listening()
  if (match) leftovers.add(Number(match[1]))
  if (!started || !match) {
    npm.kill('SIGKILL')
    throw new Error(`npm start did not print where it listens:\n${output}`)
  }
  // Only loopback is spoken to, whatever the server binds.
  return {
    npm,
    output: () => output,
    url: `http://127.0.0.1:${match[3]}`,
    serverPid: Number(match[1]),
  }
}

const exitOf = (child: ChildProcess) =>
  new Promise<number | null>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve(child.exitCode)
    else child.once('exit', (code) => resolve(code))
  })

// A real npm, a real server on the embedded database: slow on a busy machine.
const TIMEOUT_MS = 120_000

describe('npm start', () => {
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    it(
      `stops the server when npm gets ${signal}, which shuts down cleanly and exits with 0`,
      async () => {
        const server = await npmStart()
        expect(await answers(server.url)).toBe(true)

        server.npm.kill(signal)
        const code = await Promise.race([
          exitOf(server.npm),
          new Promise<'still running'>((resolve) => setTimeout(() => resolve('still running'), 20_000)),
        ])
        expect(code).toBe(0)
        expect(await eventually(() => !isRunning(server.serverPid), 20_000)).toBe(true)
        expect(await answers(server.url)).toBe(false)
        expect(server.output()).toContain(`"signal":"${signal}"`)
      },
      TIMEOUT_MS,
    )
  }
})
