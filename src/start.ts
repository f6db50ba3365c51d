import type { AddressInfo } from 'node:net'
import pino from 'pino'
import { buildApp } from './app.js'
import { bootstrapAdmin, firstStartBanner, startupWarnings } from './bootstrap.js'
import { ConfigError, loadConfig } from './config.js'
import { chunkedLog } from './runtime/chunked-log.js'
import { startupProgress } from './runtime/startup-progress.js'

// In-flight requests get this long to finish on shutdown before the process exits anyway.
const SHUTDOWN_GRACE_MS = 15_000
const WILDCARD_HOSTS = new Set(['0.0.0.0', '::'])
// Log lines are written in chunks of this size, and at least this often: one write per request was a
// large share of the service's time under load (docs/performance-log.md), and each write wakes
// whoever reads the log. A kill -9
// loses at most this last second of lines.
const LOG_CHUNK_BYTES = 60 * 1024
const LOG_FLUSH_INTERVAL_MS = 1000

/** Standard output, buffered; written out on every exit path that runs JavaScript. */
function bufferedStdout() {
  const destination = chunkedLog(
    pino.destination({ dest: 1, sync: false, maxWrite: 2 * LOG_CHUNK_BYTES }),
    LOG_CHUNK_BYTES,
  )
  setInterval(() => destination.flush(), LOG_FLUSH_INTERVAL_MS).unref()
  process.on('exit', () => {
    try {
      destination.flushSync()
    } catch {
      // Standard output is gone (a closed pipe): there is nowhere left to write to.
    }
  })
  return destination
}

async function main(): Promise<void> {
  const config = loadConfig(process.env, { server: true })
  const logStream = bufferedStdout()
  const app = await buildApp(config, { logStream })
  for (const warning of startupWarnings(config)) app.log.warn(warning)

  const bootstrap = await bootstrapAdmin(app.db, config, () =>
    startupProgress(app.log, logStream)('creating the administrator account'),
  )
  // Straight to the console, not the log: a generated password is shown exactly once.
  if (bootstrap) process.stdout.write(firstStartBanner(config, bootstrap))

  let closing = false
  const shutdown = (signal: string) => {
    if (closing) return
    closing = true
    app.log.info({ signal }, 'shutting down')
    setTimeout(() => process.exit(1), SHUTDOWN_GRACE_MS).unref()
    app.close().then(
      () => process.exit(0),
      (error: unknown) => {
        app.log.error({ err: { message: (error as Error).message } }, 'shutdown failed')
        process.exit(1)
      },
    )
  }
  process.on('SIGTERM', () => shutdown('SIGTERM'))
  process.on('SIGINT', () => shutdown('SIGINT'))

  await app.listen({ port: config.server.port, host: config.server.host })
  // Fastify names each interface's address for a wildcard bind; a newcomer wants the one to open.
  if (WILDCARD_HOSTS.has(config.server.host)) {
    const { port } = app.server.address() as AddressInfo
    app.log.info(`Server listening at http://localhost:${port} (all addresses)`)
  }
  // Whoever waits for the service to come up reads this line now, not a second later.
  logStream.flush()
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof ConfigError ? error.message : (error as Error).stack}\n`)
  process.exit(1)
})
