import { type ChildProcess, spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { createServer } from 'node:net'

export async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}

const running = new Set<ChildProcess>()
process.on('exit', () => {
  for (const child of running) child.kill('SIGKILL')
})

export interface Started {
  child: ChildProcess
  /** Milliseconds from spawn to the ready line. */
  startupMs: number
  stop(): Promise<void>
}

/** The log lines of level warn (40) and above in a chunk of the service's output, to stderr. */
function passOnProblems(chunk: Buffer) {
  const text = chunk.toString()
  if (!/"level":[4-6]0/.test(text)) return
  for (const line of text.split('\n')) if (/"level":[4-6]0/.test(line)) process.stderr.write(`${line}\n`)
}

/** Starts a process of `node` (default: this one's) and waits (up to a minute) until its output contains `ready`. */
export async function startProcess(
  args: string[],
  env: Record<string, string>,
  ready: RegExp,
  node = process.execPath,
): Promise<Started> {
  const started = Date.now()
  const child = spawn(node, args, {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  running.add(child)
  let output = ''
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`did not start: ${args.join(' ')}\n${output.slice(-2000)}`)),
      60_000,
    )
    const watch = (chunk: Buffer) => {
      output += chunk
      if (ready.test(output)) {
        clearTimeout(timer)
        // Past start-up the output is drained (the service logs every request at info: a reader
        // that falls behind would block the service on its own log writes); only warnings and
        // errors are passed on, so that a failed run says why.
        child.stdout?.off('data', watch).on('data', passOnProblems)
        child.stderr?.off('data', watch).on('data', (chunk: Buffer) => process.stderr.write(chunk))
        resolve()
      }
    }
    child.stdout?.on('data', watch)
    child.stderr?.on('data', watch)
    child.once('exit', (code) =>
      reject(new Error(`exited with ${code}: ${args.join(' ')}\n${output.slice(-2000)}`)),
    )
  })
  const startupMs = Date.now() - started
  return {
    child,
    startupMs,
    stop: () =>
      new Promise<void>((resolve) => {
        child.once('exit', () => resolve())
        child.kill('SIGTERM')
        running.delete(child)
      }),
  }
}

/** A memory figure of a running process from Linux's /proc status, in MB. */
function statusMb(pid: number, field: 'VmHWM' | 'VmRSS'): number {
  const match = readFileSync(`/proc/${pid}/status`, 'utf8').match(new RegExp(`${field}:\\s+(\\d+) kB`))
  return match ? Number(match[1]) / 1024 : Number.NaN
}

/** Peak resident memory of a process so far, in MB. */
export const peakMemoryMb = (pid: number) => statusMb(pid, 'VmHWM')

/** Resident memory of a process now, in MB. */
export const residentMemoryMb = (pid: number) => statusMb(pid, 'VmRSS')

export function runJson<T>(args: string[]): Promise<T> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] })
    let output = ''
    child.stdout.on('data', (chunk) => {
      output += chunk
    })
    child.once('exit', (code) => {
      if (code !== 0) return reject(new Error(`${args[0]} exited with ${code}`))
      resolve(JSON.parse(output.trim().split('\n').at(-1) as string) as T)
    })
  })
}
