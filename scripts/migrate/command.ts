import { migrateDatabase } from '../../db/open-databases.js'
import { loadConfig } from '../../src/config.js'
import { CommandError, openCommandDatabase } from '../cli/run.js'

const USAGE = `Usage: npm run migrate
   or: node dist/cli.mjs migrate   (a build, or the Docker image)

Applies the migrations the configured database lacks; the server also runs them at start
(MIGRATE_ON_START). With the embedded database (no DATABASE_URL), stop the server first.`

/** `npm run migrate`: returns the exit code (0 done, 1 failed, 2 bad usage). */
export async function migrateMain(argv: string[]): Promise<number> {
  if (argv.length > 0) {
    const help = ['help', '--help', '-h'].includes(argv[0] ?? '')
    process.stdout.write(`${USAGE}\n`)
    return help ? 0 : 2
  }
  const config = loadConfig(process.env)
  const handle = await openCommandDatabase(config)
  try {
    // On PostgreSQL through a connection of its own without the query timeout, as at start.
    const { results = [] } = await migrateDatabase(config.database, handle).catch((error: unknown) => {
      throw new CommandError(`Migration failed: ${(error as Error).message}`, { cause: error })
    })
    const applied = results.filter((result) => result.status === 'Success')
    for (const result of applied) process.stdout.write(`applied ${result.migrationName}\n`)
    if (applied.length === 0) process.stdout.write('already up to date\n')
    return 0
  } finally {
    await handle.close()
  }
}
