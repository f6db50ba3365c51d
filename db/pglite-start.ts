import { existsSync } from 'node:fs'
import { mkdir } from 'node:fs/promises'
import path from 'node:path'
import { copyDataDir } from './data-dir-copy.js'
import { lockDataDir } from './data-dir-lock.js'
import { PgliteThread } from './pglite-thread-client.js'

/** Where the embedded database keeps its files under DATA_DIR. */
export const embeddedDatabaseDir = (dataDir: string) => path.join(dataDir, 'pgdata')

export interface PgliteOptions {
  /** Directory for the data files; omitted, the database lives in memory. */
  dataDir?: string
  /** A data directory dump (from `PgliteThread.dump()`) to start from instead of running initdb. */
  loadDataDir?: Blob
  /** A prepared data directory (db/embedded-template.ts) that a new `dataDir` starts as a copy of, instead of running initdb. */
  template?: string
  /** PostgreSQL's shared buffers (db/pglite-thread-client.ts). */
  sharedBuffersMb?: number
}

/** PGlite opening on its thread, and what gives its data directory back to other processes. */
export interface StartedPglite {
  pglite: PgliteThread
  unlock(): Promise<void>
}

/**
 * Locks the data directory, makes it from the template on a first start, and starts PGlite's
 * thread. Not awaited: the database opens there while the caller goes on (its first statement
 * waits for it); a failure to open fails that statement, and `pglite.ready` says so at once.
 */
export async function startPglite({
  dataDir,
  loadDataDir,
  template,
  sharedBuffersMb,
}: PgliteOptions): Promise<StartedPglite> {
  let unlock = async () => {}
  if (dataDir) {
    await mkdir(path.dirname(path.resolve(dataDir)), { recursive: true })
    unlock = await lockDataDir(`${path.resolve(dataDir)}.lock`, `The embedded database in ${dataDir}`)
  }
  try {
    if (dataDir && template && !existsSync(dataDir)) await copyDataDir(template, dataDir)
    const pglite = new PgliteThread({
      dataDir,
      loadDataDir: await loadDataDir?.arrayBuffer(),
      sharedBuffersMb,
    })
    pglite.ready.catch(() => unlock())
    return { pglite, unlock }
  } catch (error) {
    await unlock()
    throw error
  }
}

const startedAhead = new Map<string, Promise<StartedPglite>>()

/**
 * Starts opening the embedded database in `dataDir`, if it exists, before the service's code is
 * read (src/server.ts): its boot, the longest step of a start (docs/performance-log.md), then
 * overlaps reading and building the service. The `startPglite` for the same directory later takes
 * it over. A first start is left to that call, which makes the directory from its template.
 */
export function startPgliteAhead(dataDir: string, sharedBuffersMb?: number): void {
  if (!existsSync(dataDir)) return
  const starting = startPglite({ dataDir, sharedBuffersMb })
  // Reported by the call that takes it over.
  starting.catch(() => {})
  startedAhead.set(path.resolve(dataDir), starting)
}

/** The start of `dataDir` begun ahead, taken over by the caller; undefined if none was begun. */
export function takeStartedAhead(dataDir: string | undefined): Promise<StartedPglite> | undefined {
  if (!dataDir) return undefined
  const key = path.resolve(dataDir)
  const starting = startedAhead.get(key)
  startedAhead.delete(key)
  return starting
}
