import { keysMain } from '../keys/command.js'
import { migrateMain } from '../migrate/command.js'
import { seedMain } from '../seed/command.js'
import { userMain } from '../user/command.js'
import { runCliCommand } from './run.js'

/**
 * The operator commands in one entry, bundled into dist/cli.mjs by `npm run build` so that a build
 * or the Docker image runs them with `node` alone: `node dist/cli.mjs user list --org /practice`.
 * In development `npm run user` (and seed, migrate, keys) run the same code from source with tsx.
 */
const COMMANDS: Record<string, { main: (argv: string[]) => Promise<number>; summary: string }> = {
  user: { main: userMain, summary: 'organizations, accounts and integration clients (user help)' },
  seed: { main: seedMain, summary: 'a demo practice in the configured database (seed --help)' },
  migrate: { main: migrateMain, summary: 'apply the migrations the database lacks' },
  keys: {
    main: keysMain,
    summary:
      'rotate the embedded issuer’s signing key (keys rotate), re-encrypt stored secrets under a new ENCRYPTION_KEY (keys reencrypt)',
  },
}

const USAGE = `Usage: node dist/cli.mjs <command> [arguments]

${Object.entries(COMMANDS)
  .map(([name, { summary }]) => `  ${name.padEnd(8)} ${summary}`)
  .join('\n')}

The same as npm run <command> -- [arguments] from source. The configuration comes from the
environment as for the server (DATABASE_URL, or DATA_DIR for the embedded database). With the
embedded database, stop the server first: it has one user at a time.`

export async function cliMain(argv: string[]): Promise<number> {
  const [name, ...rest] = argv
  const command = name === undefined ? undefined : COMMANDS[name]
  if (command) return command.main(rest)
  const help = name === undefined || ['help', '--help', '-h'].includes(name)
  if (!help) process.stderr.write(`Unknown command: ${name}\n\n`)
  ;(help ? process.stdout : process.stderr).write(`${USAGE}\n`)
  return help ? 0 : 2
}

runCliCommand(cliMain)
