import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import { CommandError } from '../../../scripts/cli/run.js'
import { keysMain } from '../../../scripts/keys/command.js'

const KEY = Buffer.alloc(32, 7).toString('base64')

let printed: string[]
let directory: string

beforeAll(async () => {
  directory = await mkdtemp(path.join(tmpdir(), 'ehr-keys-'))
})
afterAll(async () => {
  await rm(directory, { recursive: true, force: true })
})
afterEach(() => {
  vi.restoreAllMocks()
  vi.unstubAllEnvs()
})

async function keys(...argv: string[]) {
  printed = []
  vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
    printed.push(String(chunk))
    return true
  })
  return keysMain(argv)
}

describe('npm run keys: its command line', () => {
  it('prints the usage and succeeds when asked for it, with nothing or help', async () => {
    for (const argv of [[], ['help']]) {
      expect(await keys(...argv), argv.join(' ')).toBe(0)
      expect(printed.join('')).toMatch(/^Usage: npm run keys -- rotate/)
    }
  })

  it('prints the usage and exits 2 for a command line it does not know, before opening any database', async () => {
    // A DATABASE_URL nothing listens on: a command that got as far as opening it would fail otherwise.
    vi.stubEnv('DATABASE_URL', 'postgres://nobody@127.0.0.1:1/none')
    const malformed = [
      ['rotat'],
      ['rotate', 'now'],
      ['reencrypt'],
      ['reencrypt', '--from-key'],
      ['reencrypt', '--to-key', KEY],
      ['reencrypt', '--from-key', KEY, 'again'],
    ]
    for (const argv of malformed) {
      expect(await keys(...argv), argv.join(' ')).toBe(2)
      expect(printed.join(''), argv.join(' ')).toMatch(/^Usage: npm run keys/)
    }
  })

  it('refuses a --from-key that is not 32 bytes of base64, naming what it expects', async () => {
    for (const value of ['not-a-key', Buffer.alloc(16).toString('base64'), `${KEY.slice(0, -1)}!`]) {
      await expect(keys('reencrypt', '--from-key', value)).rejects.toThrow(
        new CommandError('--from-key: expected 32 bytes in base64 (44 characters), as ENCRYPTION_KEY'),
      )
    }
  })

  it('refuses to re-encrypt from the key it would re-encrypt to', async () => {
    vi.stubEnv('DATABASE_URL', undefined)
    vi.stubEnv('DATA_DIR', directory)
    vi.stubEnv('ENCRYPTION_KEY', KEY)
    await expect(keys('reencrypt', '--from-key', KEY)).rejects.toThrow(
      '--from-key is the ENCRYPTION_KEY itself: set ENCRYPTION_KEY to the new key',
    )
  })
})
