import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto'
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { type EncryptionSettings, encryptionProblems } from '../config/encryption.js'
import { ConfigError } from '../config.js'

const KEY_BYTES = 32
const IV_BYTES = 12
const TAG_BYTES = 16
const VERSION = 'v1'

/**
 * AES-256-GCM for values that must be readable again (webhook signing secrets, the token-signing
 * private key), unlike passwords and tokens, which are only hashed. `context` is authenticated with
 * the value, so a ciphertext copied into another record (another organization's) does not decrypt
 * there.
 *
 * It seals with the current key and opens with it or any previous one: while ENCRYPTION_KEY is being
 * replaced (`npm run keys -- reencrypt`), rows under either key stay readable. GCM's tag tells the
 * keys apart, so the stored format carries no key id and values sealed before still open.
 */
export class SecretBox {
  private readonly keys: readonly Buffer[]

  constructor(key: Buffer, previousKeys: readonly Buffer[] = []) {
    for (const each of [key, ...previousKeys]) {
      if (each.length !== KEY_BYTES) throw new Error(`An encryption key must be ${KEY_BYTES} bytes`)
    }
    this.keys = [key, ...previousKeys]
  }

  seal(plaintext: Buffer, context: string): string {
    const iv = randomBytes(IV_BYTES)
    const cipher = createCipheriv('aes-256-gcm', this.currentKey, iv)
    cipher.setAAD(Buffer.from(context))
    const sealed = Buffer.concat([cipher.update(plaintext), cipher.final()])
    return [VERSION, ...[iv, cipher.getAuthTag(), sealed].map((part) => part.toString('base64'))].join('.')
  }

  /** The value, opened with the current key or else a previous one; throws when none opens it. */
  open(box: string, context: string): Buffer {
    for (const key of this.keys) {
      const opened = openWith(key, box, context)
      if (opened) return opened
    }
    throw new Error('The value does not open with the encryption key')
  }

  /**
   * The value sealed under the current key, or undefined when it already is (so a re-encryption can
   * skip it and be run again after an interruption); throws when no key opens it.
   */
  reseal(box: string, context: string): string | undefined {
    if (openWith(this.currentKey, box, context)) return undefined
    return this.seal(this.open(box, context), context)
  }

  private get currentKey(): Buffer {
    return this.keys[0] as Buffer
  }
}

function openWith(key: Buffer, box: string, context: string): Buffer | undefined {
  const [version, iv, tag, sealed] = box.split('.')
  if (version !== VERSION || !iv || !tag || sealed === undefined) throw new Error('Not a sealed value')
  const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64'), {
    authTagLength: TAG_BYTES,
  })
  decipher.setAAD(Buffer.from(context))
  decipher.setAuthTag(Buffer.from(tag, 'base64'))
  try {
    return Buffer.concat([decipher.update(Buffer.from(sealed, 'base64')), decipher.final()])
  } catch {
    // GCM's tag did not match: another key (or another record's context).
    return undefined
  }
}

const KEY_FILE = 'encryption.key'

/**
 * The key from ENCRYPTION_KEY; otherwise, for the embedded database only, one generated on first
 * start into DATA_DIR (readable by the owner alone). A shared PostgreSQL database needs the
 * variable: instances with different keys could not read each other's secrets.
 */
export async function loadEncryptionKey(
  settings: Pick<EncryptionSettings, 'key' | 'keyDir' | 'keyRequired'>,
): Promise<Buffer> {
  if (settings.key) return Buffer.from(settings.key, 'base64')
  const [problem] = encryptionProblems(settings)
  if (problem) throw new ConfigError(`Invalid configuration:\n  ${problem}`)
  await mkdir(settings.keyDir, { recursive: true })
  const file = path.join(settings.keyDir, KEY_FILE)
  try {
    await writeFile(file, `${randomBytes(KEY_BYTES).toString('base64')}\n`, { mode: 0o600, flag: 'wx' })
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
  }
  const key = Buffer.from((await readFile(file, 'utf8')).trim(), 'base64')
  if (key.length !== KEY_BYTES) throw new ConfigError(`${file} does not hold a ${KEY_BYTES}-byte key`)
  return key
}

/**
 * The box the service seals with: the key of loadEncryptionKey, and ENCRYPTION_KEY_PREVIOUS (if set)
 * to open values not yet re-encrypted during a key change.
 */
export async function loadSecretBox(settings: EncryptionSettings): Promise<SecretBox> {
  return new SecretBox(await loadEncryptionKey(settings), previousEncryptionKeys(settings))
}

export const previousEncryptionKeys = (settings: Pick<EncryptionSettings, 'previousKey'>): Buffer[] =>
  settings.previousKey ? [Buffer.from(settings.previousKey, 'base64')] : []
