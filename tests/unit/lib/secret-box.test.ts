import { mkdtemp, readFile, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { ConfigError } from '../../../src/config.js'
import { loadEncryptionKey, SecretBox } from '../../../src/lib/secret-box.js'

describe('SecretBox', () => {
  it('opens what it sealed, only with the same key and context', () => {
    const box = new SecretBox(Buffer.alloc(32, 1))
    const sealed = box.seal(Buffer.from('signing key'), 'webhook-secret:1')
    expect(sealed).not.toContain(Buffer.from('signing key').toString('base64'))
    expect(box.open(sealed, 'webhook-secret:1').toString()).toBe('signing key')
    expect(() => box.open(sealed, 'webhook-secret:2')).toThrow()
    expect(() => new SecretBox(Buffer.alloc(32, 2)).open(sealed, 'webhook-secret:1')).toThrow()
    expect(box.seal(Buffer.from('x'), 'c')).not.toBe(box.seal(Buffer.from('x'), 'c'))
  })
})

describe('loadEncryptionKey', () => {
  it('generates a key file readable by the owner only, and reads it back later', async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), 'ehr-key-'))
    try {
      const options = { key: undefined, keyDir: dataDir, keyRequired: false }
      const key = await loadEncryptionKey(options)
      expect(key).toHaveLength(32)
      const file = path.join(dataDir, 'encryption.key')
      expect((await stat(file)).mode & 0o777).toBe(0o600)
      expect(Buffer.from((await readFile(file, 'utf8')).trim(), 'base64')).toEqual(key)
      expect(await loadEncryptionKey(options)).toEqual(key)
    } finally {
      await rm(dataDir, { recursive: true, force: true })
    }
  })

  it('uses ENCRYPTION_KEY when set, and requires it with a shared database', async () => {
    const configured = Buffer.alloc(32, 5).toString('base64')
    expect(await loadEncryptionKey({ key: configured, keyDir: '/nonexistent', keyRequired: true })).toEqual(
      Buffer.alloc(32, 5),
    )
    await expect(loadEncryptionKey({ key: undefined, keyDir: tmpdir(), keyRequired: true })).rejects.toThrow(
      ConfigError,
    )
  })
})
