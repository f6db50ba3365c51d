import { loadConfig } from '../../src/config.js'
import { rotateSigningKey } from '../../src/identity/signing-keys.js'
import { loadEncryptionKey, loadSecretBox, SecretBox } from '../../src/lib/secret-box.js'
import { CommandError, openCommandDatabase } from '../cli/run.js'
import { reencryptSecrets } from './reencrypt.js'

const USAGE = `Usage: npm run keys -- rotate
       npm run keys -- reencrypt --from-key <old key, base64>
   or: node dist/cli.mjs keys …   (a build, or the Docker image)

rotate     Adds a new signing key for the embedded issuer and retires the current one. Running
           instances sign with the new key within a minute; tokens of the retired key stay valid
           until they expire, and the key stays in the key set until then.
reencrypt  Re-encrypts every stored secret (signing private keys, webhook secrets) from the
           --from-key to the ENCRYPTION_KEY of the environment, one row at a time. Rows already
           under ENCRYPTION_KEY are skipped, so it can be run again after an interruption. Safe while
           instances run that read both keys (ENCRYPTION_KEY_PREVIOUS; docs/operations.md).

With the embedded database (no DATABASE_URL), stop the server first: PGlite cannot share its data
directory.`

const KEY_PATTERN = /^[A-Za-z0-9+/]{43}=$/

/** The old key of `reencrypt --from-key <key>`; undefined for a malformed command line. */
function fromKeyOf(argv: string[]): Buffer | undefined {
  const [flag, value, ...rest] = argv
  if (flag !== '--from-key' || value === undefined || rest.length > 0) return undefined
  if (!KEY_PATTERN.test(value)) {
    throw new CommandError('--from-key: expected 32 bytes in base64 (44 characters), as ENCRYPTION_KEY')
  }
  return Buffer.from(value, 'base64')
}

/** `npm run keys`: returns the exit code (0 done, 2 bad usage). */
export async function keysMain(argv: string[]): Promise<number> {
  const [command, ...rest] = argv
  const fromKey = command === 'reencrypt' ? fromKeyOf(rest) : undefined
  if (!(command === 'rotate' && rest.length === 0) && !fromKey) {
    process.stdout.write(`${USAGE}\n`)
    return argv.length === 0 || command === 'help' ? 0 : 2
  }
  const config = loadConfig(process.env)
  const handle = await openCommandDatabase(config)
  try {
    if (fromKey) {
      const newKey = await loadEncryptionKey(config.encryption)
      if (newKey.equals(fromKey)) {
        throw new CommandError('--from-key is the ENCRYPTION_KEY itself: set ENCRYPTION_KEY to the new key')
      }
      const { reencrypted, current } = await reencryptSecrets(handle.db, new SecretBox(newKey, [fromKey]))
      process.stdout.write(
        `Re-encrypted ${reencrypted} rows (signing keys, webhooks) under ENCRYPTION_KEY; ${current} were already under it\n`,
      )
      return 0
    }
    const kid = await rotateSigningKey(handle.db, await loadSecretBox(config.encryption))
    process.stdout.write(`New signing key ${kid}; earlier keys retired\n`)
    return 0
  } finally {
    await handle.close()
  }
}
