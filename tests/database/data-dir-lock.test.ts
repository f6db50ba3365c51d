import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { lockDataDir } from '../../db/data-dir-lock.js'

let directory: string

beforeAll(async () => {
  directory = await mkdtemp(path.join(tmpdir(), 'ehr-lock-'))
})
afterAll(async () => {
  await rm(directory, { recursive: true, force: true })
})

describe('lockDataDir', () => {
  it('writes our pid and removes the lock on release', async () => {
    const file = path.join(directory, 'a.lock')
    const release = await lockDataDir(file, 'data A')
    expect(await readFile(file, 'utf8')).toBe(String(process.pid))
    await release()
    await expect(readFile(file, 'utf8')).rejects.toThrow()
  })

  it('refuses a directory held by another running process, naming it', async () => {
    const file = path.join(directory, 'b.lock')
    await writeFile(file, String(process.ppid))
    await expect(lockDataDir(file, 'data B')).rejects.toThrow(`data B is in use by process ${process.ppid}`)
    expect(await readFile(file, 'utf8')).toBe(String(process.ppid))
  })

  it('takes over a stale lock of a process that is gone', async () => {
    const file = path.join(directory, 'c.lock')
    await writeFile(file, '999999999')
    const release = await lockDataDir(file, 'data C')
    expect(await readFile(file, 'utf8')).toBe(String(process.pid))
    await release()
  })
})
