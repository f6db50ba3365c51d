import { openPrimaryDatabase } from '../../db/open-databases.js'
import { type Config, ConfigError } from '../../src/config.js'
import { fromDatabaseError } from '../../src/errors.js'

/** A failure the operator can act on: printed as its message alone, one line, exit code 1. */
export class CommandError extends Error {}

// db/data-dir-lock.ts refuses a second process on the embedded database with this; a test of the
// bundled CLI (tests/process/cli.test.ts) fails should its wording change.
const EMBEDDED_BUSY = /in use by process (\d+)/

/**
 * Opens the configured database for a command. The embedded database has one user at a time, so
 * while the server runs, a command is refused in one line that says to stop the server first.
 */
export async function openCommandDatabase(config: Config) {
  try {
    return await openPrimaryDatabase(config.database, {
      onPoolError: (error) => process.stderr.write(`database pool error: ${error.message}\n`),
    })
  } catch (error) {
    if (config.database.url) throw error
    const directory = config.database.embeddedDir
    const message = ((error as Error).message ?? String(error)).split('\n')[0]
    const busy = message?.match(EMBEDDED_BUSY)
    throw new CommandError(
      busy
        ? `The embedded database in ${directory} is in use by process ${busy[1]}, probably the server: stop it first (the embedded database has one user at a time), or set DATABASE_URL to share a PostgreSQL database`
        : `Cannot open the embedded database in ${directory}: ${message}`,
      { cause: error },
    )
  }
}

/** What to print for a failure: its message alone when the operator can act on it, else the stack. */
function describeFailure(error: unknown): string {
  if (error instanceof CommandError || error instanceof ConfigError) return error.message
  const unreachable = fromDatabaseError(error)
  if (unreachable?.code === 'SYS_002') {
    const { message, code } = error as { message?: string; code?: string }
    const reason = message?.split('\n')[0] || code
    return `${unreachable.details}${reason ? ` (${reason})` : ''}: check DATABASE_URL and that PostgreSQL is running`
  }
  return (error as Error)?.stack ?? String(error)
}

/**
 * Runs an operator command's `main` with the process's arguments: its result becomes the exit
 * code; a failure the operator can act on is one line on stderr, anything else its stack.
 */
export function runCliCommand(main: (argv: string[]) => Promise<number>): void {
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code
    },
    (error: unknown) => {
      process.stderr.write(`${describeFailure(error)}\n`)
      process.exitCode = 1
    },
  )
}
