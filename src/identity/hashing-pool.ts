import type { ScryptOptions } from 'node:crypto'
import { Worker } from 'node:worker_threads'
import { AppError } from '../errors.js'

// Each thread runs scrypt on itself (scryptSync), never on libuv's threads, which the process's
// disk access, compression and DNS share: four by default, and a hash holds one for a few hundred
// milliseconds. Evaluated from this string (CommonJS) so that it runs the same under tsx, the test
// runner and the bundled build, none of which would agree on the path of a separate file.
const THREAD_SOURCE = `
const { parentPort } = require('node:worker_threads')
const { scryptSync } = require('node:crypto')
parentPort.on('message', ({ password, salt, keyLength, options }) => {
  try {
    parentPort.postMessage({ key: scryptSync(password, salt, keyLength, options) })
  } catch (error) {
    parentPort.postMessage({ error: String(error && error.message) })
  }
})
`

export interface HashingPoolSettings {
  /** Threads that hash at once. */
  threads: number
  /** Hashes that may wait for a thread; one more is refused at once. */
  queue: number
  /** The longest a hash waits for a thread before it is refused. */
  waitMs: number
}

export interface ScryptJob {
  password: string
  salt: Buffer
  keyLength: number
  options: ScryptOptions
}

/** A hash refused because every hashing thread is busy and the queue is full or too slow. */
export class HashingBusy extends AppError<'RATE_001'> {
  constructor(readonly retryAfterSeconds: number) {
    super('RATE_001', `Too many sign-ins are being checked at once; retry in ${retryAfterSeconds} seconds`)
  }
}

interface Task {
  job: ScryptJob
  resolve: (key: Buffer) => void
  reject: (error: Error) => void
  timer?: NodeJS.Timeout
}

type ThreadAnswer = { key: Uint8Array; error?: undefined } | { error: string }

/**
 * scrypt on a few threads of its own, in front of which hashes wait in a bounded queue for a
 * bounded time: a flood of sign-ins gets refusals (HashingBusy) instead of a backlog that would
 * hold every other request's disk and compression work behind it. Threads start when first needed.
 */
export function hashingPool(settings: HashingPoolSettings) {
  const threads = new Map<Worker, Task | undefined>()
  const waiting: Task[] = []
  const retryAfterSeconds = Math.max(1, Math.ceil(settings.waitMs / 1000))
  let closed = false

  const refusal = () => new HashingBusy(retryAfterSeconds)

  function assign(thread: Worker, task: Task): void {
    clearTimeout(task.timer)
    threads.set(thread, task)
    const { password, salt, keyLength, options } = task.job
    thread.postMessage({ password, salt, keyLength, options })
  }

  function next(thread: Worker): void {
    threads.set(thread, undefined)
    const task = waiting.shift()
    if (task) assign(thread, task)
  }

  function start(): Worker {
    const thread = new Worker(THREAD_SOURCE, { eval: true })
    // A thread left idle does not keep the process alive; `close` ends them all.
    thread.unref()
    thread.on('message', (answer: ThreadAnswer) => {
      const task = threads.get(thread)
      next(thread)
      if (answer.error !== undefined) task?.reject(new Error(`Password hashing failed: ${answer.error}`))
      else task?.resolve(Buffer.from(answer.key.buffer, answer.key.byteOffset, answer.key.byteLength))
    })
    // Also after an error event: a thread that died takes its hash with it, and the next one to
    // come starts a replacement.
    thread.on('exit', () => {
      const task = threads.get(thread)
      threads.delete(thread)
      task?.reject(closed ? refusal() : new Error('A password hashing thread stopped'))
      if (!closed && waiting.length > 0) next(start())
    })
    thread.on('error', () => {})
    threads.set(thread, undefined)
    return thread
  }

  function idleThread(): Worker | undefined {
    for (const [thread, task] of threads) if (!task) return thread
    return threads.size < settings.threads ? start() : undefined
  }

  // Checks under way (lookup and hashes) that `admitted` let in: at most a thread's or a queue
  // place's worth, so that the ones beyond are refused before they read the database.
  let admittedNow = 0

  return {
    /**
     * Runs `work` (an account's lookup, then its hash) if a hash asked for now could have a thread
     * or a place in the queue; HashingBusy at once otherwise, so that a refused sign-in costs next
     * to nothing.
     */
    async admitted<T>(work: () => Promise<T>): Promise<T> {
      if (closed || admittedNow >= settings.threads + settings.queue) throw refusal()
      admittedNow++
      try {
        return await work()
      } finally {
        admittedNow--
      }
    },
    /** The derived key of `job`; HashingBusy when it cannot have a thread soon enough. */
    run(job: ScryptJob): Promise<Buffer> {
      return new Promise((resolve, reject) => {
        if (closed) return reject(refusal())
        const task: Task = { job, resolve, reject }
        const thread = idleThread()
        if (thread) return assign(thread, task)
        if (waiting.length >= settings.queue) return reject(refusal())
        task.timer = setTimeout(() => {
          waiting.splice(waiting.indexOf(task), 1)
          reject(refusal())
        }, settings.waitMs)
        waiting.push(task)
      })
    },
    /** Threads running and hashes waiting, for tests and the operations view. */
    get load() {
      return {
        threads: threads.size,
        busy: [...threads.values()].filter(Boolean).length,
        waiting: waiting.length,
        admitted: admittedNow,
      }
    },
    /** Refuses what waits, ends every thread (a hash under way is refused too). */
    async close(): Promise<void> {
      closed = true
      for (const task of waiting.splice(0)) {
        clearTimeout(task.timer)
        task.reject(refusal())
      }
      await Promise.all([...threads.keys()].map((thread) => thread.terminate()))
    },
  }
}

export type HashingPool = ReturnType<typeof hashingPool>
