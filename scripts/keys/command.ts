import { loadConfig } from '../../src/config.js'
import { rotateSigningKey } from '../../src/identity/signing-keys.js'
import { openCommandDatabase } from '../cli/run.js'

const USAGE = `Usage: npm run keys -- rotate
   or: node dist/cli.mjs keys rotate   (a build, or the Docker image)

rotate  Adds a new signing key for the embedded issuer and retires the current one. Running
        instances sign with the new key within a minute; tokens of the retired key stay valid
        until they expire, and the key stays in the key set until then.

With the embedded database (no DATABASE_URL), stop the server first: PGlite cannot share its data
directory.`

/** `npm run keys`: returns the exit code (0 done, 2 bad usage). */
export async function keysMain(argv: string[]): Promise<number> {
  if (argv[0] !== 'rotate') {
    process.stdout.write(`${USAGE}\n`)
    return argv.length === 0 || argv[0] === 'help' ? 0 : 2
  }
  const config = loadConfig(process.env)
  const handle = await openCommandDatabase(config)
  try {
    const kid = await rotateSigningKey(handle.db)
    process.stdout.write(`New signing key ${kid}; earlier keys retired\n`)
    return 0
  } finally {
    await handle.close()
  }
}
