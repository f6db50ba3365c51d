import { open, readFile, rm } from 'node:fs/promises'

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/**
 * PGlite does not stop a second process from opening the same data directory, and two writers
 * would corrupt it. A lock file holding the owner's pid does; a lock whose process is gone (or is
 * this very pid, reused after a container restart) is stale and taken over.
 */
export async function lockDataDir(lockFile: string, description: string): Promise<() => Promise<void>> {
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const handle = await open(lockFile, 'wx', 0o600)
      await handle.writeFile(String(process.pid))
      await handle.close()
      return () => rm(lockFile, { force: true })
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
      const holder = Number.parseInt(await readFile(lockFile, 'utf8').catch(() => ''), 10)
      if (holder > 0 && holder !== process.pid && isRunning(holder)) {
        throw new Error(
          `${description} is in use by process ${holder}; stop that process first, or use DATABASE_URL to share a PostgreSQL database`,
        )
      }
      await rm(lockFile, { force: true })
    }
  }
  throw new Error(`Could not lock ${description}`)
}
