import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto'
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { ConfigError } from '../config.js'

const KEY_BYTES = 32
const IV_BYTES = 12
const TAG_BYTES = 16
const VERSION = 'v1'

/**
 * AES-256-GCM for values that must be readable again (webhook signing secrets), unlike passwords
 * and tokens, which are only hashed. `context` is authenticated with the value, so a ciphertext
 * copied into another record (another organization's) does not decrypt there.
 */
export class SecretBox {
  constructor(private readonly key: Buffer) {
    if (key.length !== KEY_BYTES) throw new Error(`An encryption key must be ${KEY_BYTES} bytes`)
  }

  seal(plaintext: Buffer, context: string): string {
    const iv = randomBytes(IV_BYTES)
    const cipher = createCipheriv('aes-256-gcm', this.key, iv)
    cipher.setAAD(Buffer.from(context))
    const sealed = Buffer.concat([cipher.update(plaintext), cipher.final()])
    return [VERSION, ...[iv, cipher.getAuthTag(), sealed].map((part) => part.toString('base64'))].join('.')
  }

  open(box: string, context: string): Buffer {
    const [version, iv, tag, sealed] = box.split('.')
    if (version !== VERSION || !iv || !tag || sealed === undefined) {
      throw new Error('Not a sealed value')
    }
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64'), {
      authTagLength: TAG_BYTES,
    })
    decipher.setAAD(Buffer.from(context))
    decipher.setAuthTag(Buffer.from(tag, 'base64'))
    return Buffer.concat([decipher.update(Buffer.from(sealed, 'base64')), decipher.final()])
  }
}

const KEY_FILE = 'encryption.key'

/**
 * The key from ENCRYPTION_KEY; otherwise, for the embedded database only, one generated on first
 * start into DATA_DIR (readable by the owner alone). A shared PostgreSQL database needs the
 * variable: instances with different keys could not read each other's secrets.
 */
export async function loadEncryptionKey(options: {
  configured: string | undefined
  dataDir: string
  sharedDatabase: boolean
}): Promise<Buffer> {
  if (options.configured) return Buffer.from(options.configured, 'base64')
  if (options.sharedDatabase) {
    throw new ConfigError(
      'Invalid configuration:\n  ENCRYPTION_KEY: required when DATABASE_URL is set (every instance must use the same key); create one with `openssl rand -base64 32`',
    )
  }
  await mkdir(options.dataDir, { recursive: true })
  const file = path.join(options.dataDir, KEY_FILE)
  try {
    await writeFile(file, `${randomBytes(KEY_BYTES).toString('base64')}\n`, { mode: 0o600, flag: 'wx' })
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
  }
  const key = Buffer.from((await readFile(file, 'utf8')).trim(), 'base64')
  if (key.length !== KEY_BYTES) throw new ConfigError(`${file} does not hold a ${KEY_BYTES}-byte key`)
  return key
}
