import { type ChildProcess, spawn } from 'node:child_process'
import { copyFile, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'

const prismCli = path.resolve('node_modules', '@stoplight', 'prism-cli', 'dist', 'index.js')

export interface PrismProxy {
  /** Where Prism answers, e.g. http://127.0.0.1:41234 */
  url: string
  /**
   * The violations Prism logged so far, one line each: `Violation: <location> <message>` for those it
   * found in an exchange, `Request terminated with error: …` for a request it refused (a request
   * violation under --errors, an unknown route) or an upstream it could not reach.
   */
  loggedViolations: () => string[]
  /** Everything Prism printed, for a failure message. */
  output: () => string
  stop: () => Promise<void>
}

export interface PrismOptions {
  /** The OpenAPI document every request and response is validated against. */
  document: string
  /** The service Prism forwards to, e.g. http://127.0.0.1:8080 */
  upstream: string
  /**
   * Whether a violating response is replaced by a 500 problem (`--errors`, the default) or passed
   * through with the `sl-violations` header only, which shows every violation of a run at once.
   */
  errors?: boolean
  /** Bounds the start (parsing the document, listening). */
  startTimeoutMs?: number
}

/**
 * Starts Stoplight Prism as a validating proxy in front of `upstream`, on loopback and an ephemeral
 * port. Each request and response is checked against the document. A violation found in an answer
 * is named in its `sl-violations` header; under `--errors` an answer with one is replaced by a 500
 * problem listing them, and a request with one is answered with a 422 problem, never forwarded.
 * Prism has no telemetry; it reaches only the upstream (no `--upstream-proxy`; its node-fetch does
 * not read proxy variables, which are not passed anyway) and what the document's `$ref`s point to
 * (openapi.json's are all local).
 */
export async function startPrism(options: PrismOptions): Promise<PrismProxy> {
  // Prism watches its document and restarts, on another ephemeral port, when it changes: a copy of
  // its own keeps the address, and what is checked, fixed for the run.
  const dir = await mkdtemp(path.join(tmpdir(), 'ehr-prism-'))
  const document = path.join(dir, path.basename(options.document))
  await copyFile(options.document, document)
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, NO_COLOR: '1', FORCE_COLOR: '0' }
  const child = spawn(
    process.execPath,
    [
      prismCli,
      'proxy',
      document,
      options.upstream,
      `--errors=${options.errors ?? true}`,
      '--host',
      '127.0.0.1',
      '--port',
      '0',
      // One process: the proxy itself, which is what stop() ends.
      '--multiprocess=false',
      // Info is the level that prints the listening address (headers and bodies are debug).
      '--verboseLevel',
      'info',
    ],
    { env, stdio: ['ignore', 'pipe', 'pipe'] },
  )
  let output = ''
  const collect = (chunk: Buffer) => {
    output += chunk.toString()
  }
  child.stdout?.on('data', collect)
  child.stderr?.on('data', collect)
  const stop = async () => {
    await stopChild(child)
    await rm(dir, { recursive: true, force: true })
  }
  const url = await listeningAddress(child, () => output, options.startTimeoutMs ?? 30_000).catch(
    async (error: Error) => {
      await stop()
      throw error
    },
  )
  return {
    url,
    loggedViolations: () =>
      output
        .split('\n')
        .map((line) => line.match(/(Violation|Request terminated with error): .*/)?.[0])
        .filter((line): line is string => line !== undefined),
    output: () => output,
    stop,
  }
}

function listeningAddress(child: ChildProcess, output: () => string, timeoutMs: number): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    const done = () => {
      clearInterval(poll)
      clearTimeout(timer)
      child.off('exit', exited)
    }
    const timer = setTimeout(() => {
      done()
      // Never leave a half-started proxy behind.
      child.kill('SIGKILL')
      reject(new Error(`Prism did not start within ${timeoutMs} ms:\n${output()}`))
    }, timeoutMs)
    const poll = setInterval(() => {
      const match = output().match(/Prism is listening on (http:\/\/127\.0\.0\.1:\d+)/)
      if (match?.[1]) {
        done()
        resolve(match[1])
      }
    }, 50)
    const exited = (code: number | null) => {
      done()
      reject(new Error(`Prism exited with ${code}:\n${output()}`))
    }
    child.once('exit', exited)
  })
}

function stopChild(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) {
      resolve()
      return
    }
    // Prism has nothing to flush; a proxy that ignores SIGTERM is killed after a bound.
    const timer = setTimeout(() => child.kill('SIGKILL'), 5_000)
    child.once('exit', () => {
      clearTimeout(timer)
      resolve()
    })
    child.kill('SIGTERM')
  })
}
