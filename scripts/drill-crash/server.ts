import { type ChildProcess, spawn } from 'node:child_process'
import path from 'node:path'

/** `npm start`'s entry (the sources through tsx), or the production bundle `npm run build` makes. */
export const ENTRIES = {
  source: ['--import', 'tsx', path.resolve('src/server.ts')],
  bundle: [path.resolve('dist/server.mjs')],
}

export interface Service {
  child: ChildProcess
  baseUrl: string
  /** The last few kilobytes the process wrote, to say why it failed. */
  tail(): string
}

// Every process this drill starts, killed when the drill ends however it ends.
const running = new Set<ChildProcess>()
process.on('exit', () => {
  for (const child of running) child.kill('SIGKILL')
})
// Interrupted, the drill still leaves no service behind: exiting runs the handler above.
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => process.exit(130))

const TAIL_BYTES = 8192
const READY = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/

/** Starts the service on loopback and an ephemeral port; waits (bounded) for its listening line. */
export async function startService(entry: string[], env: Record<string, string>, timeoutMs: number) {
  const child = spawn(process.execPath, entry, {
    env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  running.add(child)
  child.once('exit', () => running.delete(child))
  let output = ''
  // Read to the end all along (the service logs every request): a pipe nobody drains blocks it.
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-TAIL_BYTES)
  }
  child.stdout?.on('data', keep)
  child.stderr?.on('data', keep)
  const baseUrl = await new Promise<string>((resolve, reject) => {
    const fail = (reason: string) => {
      clearInterval(poll)
      clearTimeout(timer)
      child.off('exit', exited)
      child.kill('SIGKILL')
      reject(new Error(`${reason}:\n${output}`))
    }
    const exited = (code: number | null, signal: string | null) =>
      fail(`the service exited (${signal ?? code}) while starting`)
    const timer = setTimeout(() => fail(`the service did not start within ${timeoutMs} ms`), timeoutMs)
    const poll = setInterval(() => {
      const match = output.match(READY)
      if (match?.[1]) {
        clearInterval(poll)
        clearTimeout(timer)
        child.off('exit', exited)
        resolve(match[1])
      }
    }, 50)
    child.once('exit', exited)
  })
  return { child, baseUrl, tail: () => output } satisfies Service
}

/** Sends `signal` and waits (bounded) for the process to be gone; SIGKILL if it outstays the bound. */
export function stopService(service: Service, signal: NodeJS.Signals, timeoutMs = 20_000): Promise<void> {
  const { child } = service
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve()
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs)
    child.once('exit', () => {
      clearTimeout(timer)
      resolve()
    })
    child.kill(signal)
  })
}
