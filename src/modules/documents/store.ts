import { createHash } from 'node:crypto'
import { createReadStream, createWriteStream } from 'node:fs'
import { mkdir, rename, rm } from 'node:fs/promises'
import path from 'node:path'
import type { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { AppError } from '../../errors.js'
import type { ByteRange } from '../../lib/byte-range.js'

interface StoredObject {
  size: number
  sha256: string
}

/** Where document bytes live. Keys are random (never client file names). */
export interface DocumentStore {
  /** Streams the source to the store; nothing is left behind if it fails. */
  write(key: string, source: AsyncIterable<Buffer>): Promise<StoredObject>
  read(key: string, range?: ByteRange): Promise<Readable>
  remove(key: string): Promise<void>
}

export async function* measured(
  source: AsyncIterable<Buffer>,
  totals: { size: number; hash: ReturnType<typeof createHash> },
) {
  for await (const chunk of source) {
    totals.size += chunk.length
    totals.hash.update(chunk)
    yield chunk
  }
}

/** Files under a directory, two levels of sharding by key prefix, written to a temporary name first. */
export function localStore(root: string): DocumentStore {
  const location = (key: string) => path.join(root, key.slice(0, 2), key)
  return {
    async write(key, source) {
      const target = location(key)
      const partial = `${target}.partial`
      await mkdir(path.dirname(target), { recursive: true })
      const totals = { size: 0, hash: createHash('sha256') }
      try {
        await pipeline(measured(source, totals), createWriteStream(partial, { flags: 'wx', mode: 0o600 }))
        await rename(partial, target)
      } catch (error) {
        await rm(partial, { force: true })
        throw error
      }
      return { size: totals.size, sha256: totals.hash.digest('hex') }
    },
    async read(key, range) {
      return createReadStream(location(key), range ? { start: range.start, end: range.end } : {})
    },
    async remove(key) {
      const target = location(key)
      await rm(target, { force: true })
      await rm(`${target}.partial`, { force: true })
    },
  }
}

const unavailable = (cause: unknown) =>
  new AppError('SYS_002', 'The document store did not answer or refused the request; try again later', {
    message: 'Document storage unavailable',
    cause,
  })

/**
 * The store's own failures (unreachable, refusing, out of space) become 503 SYS_002 with their
 * cause kept for the log, never a 500. A failure of the bytes being written (the client's upload
 * cut short, or refused by the type check) is passed on as it is: that one is the client's.
 */
export function failingAsUnavailable(store: DocumentStore): DocumentStore {
  return {
    async write(key, source) {
      let sourceFailure: { error: unknown } | undefined
      async function* watched() {
        try {
          yield* source
        } catch (error) {
          sourceFailure = { error }
          throw error
        }
      }
      try {
        return await store.write(key, watched())
      } catch (error) {
        throw sourceFailure ? sourceFailure.error : unavailable(error)
      }
    },
    read: (key, range) =>
      store.read(key, range).catch((error: unknown) => Promise.reject(unavailable(error))),
    remove: (key) => store.remove(key).catch((error: unknown) => Promise.reject(unavailable(error))),
  }
}
