import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { exited, freePort } from './processes.js'

export interface RedisServer {
  port: number
  url: string
  /** Freezes the server (SIGSTOP): connections stay open and nothing is answered, as in a hang. */
  pause(): void
  /** Lets a paused server run again (SIGCONT); it answers what it was sent meanwhile. */
  resume(): void
  /** Kills the server (connections refused from then on). */
  kill(): Promise<void>
  /** Starts a new, empty server on the same port (its data lost, as after a restart without persistence). */
  restart(): Promise<void>
  stop(): Promise<void>
}

const START_TIMEOUT_MS = 10_000
const STOP_TIMEOUT_MS = 5000

/**
 * A private redis-server (the system's) on a free loopback port, without persistence, that the test
 * can freeze, kill and restart empty; never the shared server other tests use.
 */
export async function startRedisServer(): Promise<RedisServer> {
  const port = await freePort()
  const directory = await mkdtemp(path.join(tmpdir(), 'ehr-redis-'))
  let child: ChildProcess | undefined

  const launch = async () => {
    const started = spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', directory],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    )
    child = started
    let output = ''
    const collect = (chunk: Buffer) => {
      output += chunk.toString('utf8')
    }
    started.stdout?.on('data', collect)
    started.stderr?.on('data', collect)
    let spawnError: Error | undefined
    started.once('error', (error) => {
      spawnError = error
    })
    const deadline = Date.now() + START_TIMEOUT_MS
    for (;;) {
      if (spawnError || started.exitCode !== null || started.signalCode !== null)
        throw new Error(`redis-server did not start: ${spawnError?.message ?? 'it exited'}\n${output}`)
      if (output.includes('Ready to accept connections')) return
      if (Date.now() > deadline) {
        started.kill('SIGKILL')
        throw new Error(`redis-server was not ready within ${START_TIMEOUT_MS} ms\n${output}`)
      }
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
  }

  const kill = async () => {
    if (!child) return
    child.kill('SIGKILL')
    await exited(child, STOP_TIMEOUT_MS)
    child = undefined
  }

  await launch()
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    pause: () => void child?.kill('SIGSTOP'),
    resume: () => void child?.kill('SIGCONT'),
    kill,
    async restart() {
      await kill()
      await launch()
    },
    async stop() {
      await kill()
      await rm(directory, { recursive: true, force: true })
    },
  }
}
