import { type ChildProcess, spawn } from 'node:child_process'
import path from 'node:path'

export interface RunningServer {
  child: ChildProcess
  output: () => string
  baseUrl: string
}

const sourceEntry = ['--import', 'tsx', path.resolve('src/server.ts')]

/**
 * Starts the real entry point as `npm start` does (or another, such as the production bundle), on
 * loopback and an ephemeral port.
 */
export async function startServer(
  env: Record<string, string>,
  entry: string[] = sourceEntry,
): Promise<RunningServer> {
  const child = spawn(process.execPath, entry, {
    env: { PATH: process.env.PATH, HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'info', ...env },
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
    const timer = setTimeout(() => {
      clearInterval(poll)
      // Never leave a half-started server behind.
      child.kill('SIGKILL')
      reject(new Error(`server did not start:\n${output}`))
    }, 45_000)
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

export function stopServer(
  server: RunningServer,
  signal: NodeJS.Signals = 'SIGTERM',
): Promise<number | null> {
  return new Promise((resolve) => {
    if (server.child.exitCode !== null || server.child.signalCode !== null) {
      resolve(server.child.exitCode)
      return
    }
    server.child.once('exit', (code) => resolve(code))
    server.child.kill(signal)
  })
}
