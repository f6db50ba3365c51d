import { openConfiguredDatabase } from '../../src/app.js'
import { loadConfig } from '../../src/config.js'
import { rotateSigningKey } from '../../src/identity/signing-keys.js'
import { runCommand } from '../lib/run-command.js'

const USAGE = `Usage: npm run keys -- rotate

rotate  Adds a new signing key for the embedded issuer and retires the current one. Running
        instances sign with the new key within a minute; tokens of the retired key stay valid
        until they expire, and the key stays in the key set until then.`

async function main(argv: string[]): Promise<number> {
  if (argv[0] !== 'rotate') {
    process.stdout.write(`${USAGE}\n`)
    return argv.length === 0 || argv[0] === 'help' ? 0 : 2
  }
  const config = loadConfig(process.env)
  const handle = await openConfiguredDatabase(config, (error) =>
    process.stderr.write(`database pool error: ${error.message}\n`),
  )
  try {
    const kid = await rotateSigningKey(handle.db)
    process.stdout.write(`New signing key ${kid}; earlier keys retired\n`)
    return 0
  } finally {
    await handle.close()
  }
}

runCommand(main)
