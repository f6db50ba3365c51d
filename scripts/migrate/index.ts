import { migrateToLatest } from '../../db/migrator.js'
import { openConfiguredDatabase } from '../../src/app.js'
import { ConfigError, loadConfig } from '../../src/config.js'

async function main(): Promise<void> {
  const config = loadConfig(process.env)
  const handle = await openConfiguredDatabase(config, (error) =>
    process.stderr.write(`database pool error: ${error.message}\n`),
  )
  try {
    const { results = [] } = await migrateToLatest(handle.db)
    const applied = results.filter((result) => result.status === 'Success')
    for (const result of applied) process.stdout.write(`applied ${result.migrationName}\n`)
    if (applied.length === 0) process.stdout.write('already up to date\n')
  } finally {
    await handle.close()
  }
}

main().catch((error: unknown) => {
  const message =
    error instanceof ConfigError ? error.message : `Migration failed: ${(error as Error).message}`
  process.stderr.write(`${message}\n`)
  process.exitCode = 1
})
