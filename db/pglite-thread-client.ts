import { Worker } from 'node:worker_threads'

export interface PgliteThreadOptions {
  /** Directory for the data files; omitted, the database lives in memory. */
  dataDir?: string
  /** A data directory dump (from `dump()`) to start from instead of running initdb. */
  loadDataDir?: ArrayBuffer
  /** PostgreSQL's shared buffers, its page cache (default EMBEDDED_SHARED_BUFFERS_MB). */
  sharedBuffersMb?: number
}

/** The default of EMBEDDED_SHARED_BUFFERS_MB, whose description (src/config/database.ts) says why. */
export const EMBEDDED_SHARED_BUFFERS_MB = 32

export interface PgliteQueryResult<R> {
  rows: R[]
  affectedRows?: number
}

type ErrorFields = { message: string } & Record<string, string | number>

type Reply =
  | { op: 'ready' }
  | { op: 'failed'; error: ErrorFields }
  | { op: 'notify'; listener: number; payload: string }
  | { op?: undefined; id: number; result?: unknown; error?: ErrorFields }

interface Pending {
  resolve(value: unknown): void
  reject(error: Error): void
}

/** An error of the database, with PostgreSQL's fields (code, constraint, detail…) as a driver gives them. */
class PgliteError extends Error {
  constructor({ message, ...fields }: ErrorFields) {
    super(message)
    Object.assign(this, fields)
  }
}

// SQLSTATE connection_failure: the error mapping answers 503, as for a lost PostgreSQL connection.
const threadGone = (why: string) =>
  new PgliteError({ message: `The embedded database ${why}`, code: '08006' })

// The bundle places this file beside the code that starts it (scripts/bundle).
const THREAD_FILE = new URL('./pglite-thread.mjs', import.meta.url)

/**
 * PGlite on a thread of its own (db/pglite-thread.mjs). Its boot (the WebAssembly PostgreSQL and
 * its file system, the longest step of a start) then overlaps the rest of a start, and its
 * statements run beside the event loop instead of on it. Requests sent before the database is open
 * wait in the thread's queue; if it fails to open, they and every later one fail with its error.
 *
 * The thread keeps the process alive only while a request is waiting on it, as an open database on
 * the main thread would not either.
 */
export class PgliteThread {
  readonly ready: Promise<void>
  private readonly worker: Worker
  private readonly pending = new Map<number, Pending>()
  private readonly listeners = new Map<number, (payload: string) => void>()
  private nextId = 1
  private failure: Error | undefined

  constructor({
    dataDir,
    loadDataDir,
    sharedBuffersMb = EMBEDDED_SHARED_BUFFERS_MB,
  }: PgliteThreadOptions = {}) {
    this.worker = new Worker(THREAD_FILE, {
      workerData: { dataDir, loadDataDir, sharedBuffersMb },
      transferList: loadDataDir ? [loadDataDir] : [],
    })
    this.ready = new Promise<void>((resolve, reject) => {
      this.pending.set(0, { resolve: () => resolve(), reject })
    })
    // Whoever awaits `ready` handles a failure; requests fail with it too.
    this.ready.catch(() => {})
    this.worker.on('message', (reply: Reply) => this.receive(reply))
    this.worker.on('error', (error) => this.fail(threadGone(`stopped: ${error.message}`)))
    this.worker.on('exit', () => this.fail(threadGone('is closed')))
  }

  query<R>(sql: string, params: readonly unknown[]): Promise<PgliteQueryResult<R>> {
    return this.send({ op: 'query', sql, params }) as Promise<PgliteQueryResult<R>>
  }

  /** Calls `onNotify` with the payload of every NOTIFY on `channel`; resolves to what stops it. */
  async listen(channel: string, onNotify: (payload: string) => void): Promise<() => Promise<void>> {
    const listener = (await this.send({ op: 'listen', channel })) as number
    this.listeners.set(listener, onNotify)
    return async () => {
      this.listeners.delete(listener)
      await this.send({ op: 'unlisten', listener })
    }
  }

  /** The data directory as a gzipped tar, to open again with `loadDataDir`. */
  dump(): Promise<ArrayBuffer> {
    return this.send({ op: 'dump' }) as Promise<ArrayBuffer>
  }

  async close(): Promise<void> {
    if (!this.failure) await this.send({ op: 'close' }).catch(() => {})
    await this.worker.terminate()
  }

  private send(message: Record<string, unknown>): Promise<unknown> {
    if (this.failure) return Promise.reject(this.failure)
    const id = this.nextId++
    if (this.pending.size === 0) this.worker.ref()
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject })
      this.worker.postMessage({ ...message, id })
    })
  }

  private settle(id: number): Pending | undefined {
    const pending = this.pending.get(id)
    this.pending.delete(id)
    if (this.pending.size === 0) this.worker.unref()
    return pending
  }

  private receive(reply: Reply): void {
    switch (reply.op) {
      case 'notify':
        this.listeners.get(reply.listener)?.(reply.payload)
        return
      case 'ready':
        this.settle(0)?.resolve(undefined)
        return
      case 'failed':
        this.fail(new PgliteError(reply.error))
        return
      default: {
        const pending = this.settle(reply.id)
        if (reply.error) pending?.reject(new PgliteError(reply.error))
        else pending?.resolve(reply.result)
      }
    }
  }

  private fail(error: Error): void {
    this.failure ??= error
    for (const id of [...this.pending.keys()]) this.settle(id)?.reject(this.failure)
  }
}
