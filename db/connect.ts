import { Kysely, type LogEvent } from 'kysely'
import type { Database, Db } from './database.js'
import { PgliteDialect } from './pglite-dialect.js'
import { type PgliteOptions, startPglite, takeStartedAhead } from './pglite-start.js'

// PostgreSQL's side is in postgres.ts, loaded only when DATABASE_URL is set: pg costs an embedded
// start tens of milliseconds to read.

interface PoolStats {
  total: number
  idle: number
  waiting: number
  max: number
}

export type Unlisten = () => Promise<void>

/** A session advisory lock held by a connection of its own. */
export interface SessionLock {
  /** False once released, or once its connection was lost (the server released the lock with it). */
  readonly held: boolean
  release(): Promise<void>
}

/** Told about every query (its duration, its error if it failed, its SQL) and every lost connection. */
export interface DatabaseObserver {
  query(seconds: number, error: unknown, statement: string): void
  connectionError(): void
}

/** An open database: the Kysely handle plus what operations need to know about the connections. */
export interface DatabaseHandle {
  db: Db
  kind: 'postgres' | 'pglite'
  poolStats(): PoolStats
  /** Sets who hears about queries and lost connections (the metrics); replaces any earlier one. */
  observe(observer: DatabaseObserver): void
  /**
   * Calls `onNotify` with the payload of every NOTIFY on `channel` (sent on commit), and once more
   * without one whenever listening (re)starts, since notifications sent while not listening are lost.
   */
  listen(channel: string, onNotify: (payload?: string) => void): Promise<Unlisten>
  /**
   * Takes the session advisory lock `key` if no other session holds it (undefined if one does), on
   * a connection of its own that keeps it until `release()`: a pooled connection would be handed to
   * other queries, and behind a pooler in transaction mode each statement may reach another session.
   */
  sessionLock(key: bigint): Promise<SessionLock | undefined>
  close(): Promise<void>
}

/**
 * Kysely's log hook sees every query with its duration, at the cost of one function call; the
 * observer is set after the database opens (the metrics plugin comes later).
 */
export function observation() {
  let observer: DatabaseObserver | undefined
  return {
    log: (event: LogEvent) => {
      observer?.query(
        event.queryDurationMillis / 1000,
        event.level === 'error' ? event.error : undefined,
        event.query.sql,
      )
    },
    connectionError: () => observer?.connectionError(),
    observe: (next: DatabaseObserver) => {
      observer = next
    },
  }
}

export async function openPglite(options: PgliteOptions): Promise<DatabaseHandle> {
  const { pglite, unlock } = await (takeStartedAhead(options.dataDir) ?? startPglite(options))
  const observed = observation()
  const db = new Kysely<Database>({ dialect: new PgliteDialect(pglite), log: observed.log })
  return {
    db,
    kind: 'pglite',
    poolStats: () => ({ total: 1, idle: 1, waiting: 0, max: 1 }),
    observe: observed.observe,
    // Through Kysely's connection, so the LISTEN cannot land inside another caller's transaction
    // (and be undone by its rollback) on PGlite's single session.
    listen: async (channel, onNotify) => {
      const unsubscribe = await db
        .connection()
        .execute(() => pglite.listen(channel, (payload) => onNotify(payload)))
      onNotify()
      return () => db.connection().execute(() => unsubscribe())
    },
    // One process at a time opens the embedded database (its data directory is locked), so no
    // other instance can be running the same job.
    sessionLock: async () => {
      let held = true
      return {
        get held() {
          return held
        },
        release: async () => {
          held = false
        },
      }
    },
    close: async () => {
      await db.destroy()
      await pglite.close()
      await unlock()
    },
  }
}
