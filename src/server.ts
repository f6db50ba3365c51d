import { buildApp } from './app.js'
import { bootstrapAdmin, firstStartBanner } from './bootstrap.js'
import { ConfigError, loadConfig } from './config.js'

// In-flight requests get this long to finish on shutdown before the process exits anyway.
const SHUTDOWN_GRACE_MS = 15_000

async function main(): Promise<void> {
  const config = loadConfig(process.env)
  const app = await buildApp(config)

  const bootstrap = await bootstrapAdmin(app.db, config)
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

  await app.listen({ port: config.PORT, host: config.HOST })
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof ConfigError ? error.message : (error as Error).stack}\n`)
  process.exit(1)
})
