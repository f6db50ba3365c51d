import { Kysely, PostgresDialect } from 'kysely'
import pg from 'pg'
import { type DatabaseHandle, observation, type SessionLock, type Unlisten } from './connect.js'
import type { Database } from './database.js'
import { DEFAULT_PREPARED_STATEMENTS, PreparingPostgresDialect } from './prepared-statements.js'
import { parseTimestamptz, TIMESTAMPTZ_OID } from './utc-timestamp.js'

const INT8_OID = 20
const DATE_OID = 1082

// Dates stay 'YYYY-MM-DD' text (a Date object would shift a birth date across time zones);
// int8 values (counts, bigint ids) become numbers. PGlite's thread parses alike (db/pglite-thread.mjs).
const keepText = (value: string) => value

export interface PostgresOptions {
  url: string
  /**
   * A direct connection to the same primary, for what needs a session of its own (LISTEN, session
   * locks); default `url`. Differs from it when `url` goes through a pooler in transaction mode,
   * which hands each transaction to any of its server connections.
   */
  directUrl?: string
  poolMax: number
  /** How many distinct statements to prepare per connection; 0 prepares none (for a pooler in transaction mode). */
  preparedStatements?: number
  /**
   * The longest one statement may run (the server cancels it) and the longest the client waits
   * for a pooled connection (default 30 s; 0: no limit, for migrations). A connection that gives no
   * answer for a little longer than that (a cut network, where the server's cancel never arrives)
   * is given up and replaced.
   */
  statementTimeoutMs?: number
  onPoolError?: (error: Error) => void
}

// The client waits this much longer than the server's own limit, so that a statement the server
// cancels reports the server's error; only a silent connection reaches the client's limit.
const CLIENT_GRACE_MS = 1000

/** pg's error when a connection did not answer a query within `query_timeout`. */
const isSilentConnection = (error: unknown) => (error as Error | undefined)?.message === 'Query read timeout'

/**
 * A connection that stopped answering is not handed out again: its next user would wait out the
 * same silence. Once one has gone silent the others opened at the same time through the same
 * network are suspect too, so the idle ones are closed as well; the pool opens fresh ones.
 */
function discardingSilentConnections(pool: pg.Pool): void {
  // pg-pool has no public way to close idle clients early, nor pg to drop a socket at once (ending
  // it politely would wait on the silent peer): both are reached through their internals here.
  const internals = pool as unknown as {
    _idle: { client: pg.PoolClient }[]
    _remove(client: pg.PoolClient): void
  }
  const dropSocket = (client: pg.PoolClient) =>
    (client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy()
  // The clients that went silent. A client is handed out many times: its `query` is wrapped once
  // (wrapping it on every checkout would nest the wrappers until the stack overflows), while pg-pool
  // gives it a new `release` on every checkout, which is wrapped each time.
  const silent = new WeakSet<pg.PoolClient>()
  const watched = new WeakSet<pg.PoolClient>()
  const watch = (client: pg.PoolClient) => {
    if (watched.has(client)) return
    watched.add(client)
    const query = client.query.bind(client) as (...args: unknown[]) => unknown
    client.query = ((...args: unknown[]) => {
      const result = query(...args)
      if (result instanceof Promise) {
        result.catch((error: unknown) => {
          if (isSilentConnection(error)) silent.add(client)
        })
      }
      return result
    }) as typeof client.query
  }
  const connect = pool.connect.bind(pool)
  pool.connect = (async () => {
    const client = await connect()
    watch(client)
    const release = client.release
    client.release = ((error?: Error | boolean) => {
      if (!silent.has(client)) return release(error)
      dropSocket(client)
      release(new Error('The connection stopped answering'))
      for (const idle of [...internals._idle]) {
        dropSocket(idle.client)
        internals._remove(idle.client)
      }
    }) as typeof client.release
    return client
  }) as typeof pool.connect
}

export function openPostgres({
  url,
  directUrl = url,
  poolMax,
  preparedStatements = DEFAULT_PREPARED_STATEMENTS,
  statementTimeoutMs = 30_000,
  onPoolError,
}: PostgresOptions): DatabaseHandle {
  const pool = new pg.Pool({
    connectionString: url,
    max: poolMax,
    connectionTimeoutMillis: statementTimeoutMs || 30_000,
    idleTimeoutMillis: 30_000,
    // A startup parameter: costs nothing per query, but PgBouncer refuses connections that send
    // it unless told to ignore it, and then its own server-side limit applies (docs/operations.md).
    statement_timeout: statementTimeoutMs,
    ...(statementTimeoutMs > 0 ? { query_timeout: statementTimeoutMs + CLIENT_GRACE_MS } : {}),
    // A dead peer is noticed by the operating system too, not only by a query waiting on it.
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
    types: {
      getTypeParser: ((oid: number, format?: 'text' | 'binary') => {
        if (oid === INT8_OID) return Number
        if (oid === DATE_OID) return keepText
        if (oid === TIMESTAMPTZ_OID) return parseTimestamptz
        return pg.types.getTypeParser(oid, format)
      }) as typeof pg.types.getTypeParser,
    },
  })
  // A client that loses its connection emits 'error'. The pool listens only while the client is
  // idle, so a drop during a query would otherwise be an uncaught exception that ends the process;
  // every client therefore gets its own listener. The query fails with the same error and the pool
  // discards the broken client. The pool's re-emission of idle errors was reported by that listener.
  const observed = observation()
  pool.on('connect', (client) =>
    client.on('error', (error) => {
      observed.connectionError()
      onPoolError?.(error)
    }),
  )
  pool.on('error', () => {})
  discardingSilentConnections(pool)
  // Failures to open a connection (refused, timed out) surface only here, before any query.
  const connect = pool.connect.bind(pool)
  pool.connect = (async () => {
    try {
      return await connect()
    } catch (error) {
      observed.connectionError()
      throw error
    }
  }) as typeof pool.connect
  const dialect =
    preparedStatements > 0
      ? new PreparingPostgresDialect(pool, preparedStatements)
      : new PostgresDialect({ pool })
  const db = new Kysely<Database>({ dialect, log: observed.log })
  const listeners = new Set<Unlisten>()
  return {
    db,
    kind: 'postgres',
    poolStats: () => ({
      total: pool.totalCount,
      idle: pool.idleCount,
      waiting: pool.waitingCount,
      max: poolMax,
    }),
    observe: observed.observe,
    listen: async (channel, onNotify) => {
      const stop = listenOnPostgres(directUrl, channel, onNotify, onPoolError)
      const unlisten = async () => {
        listeners.delete(unlisten)
        await stop()
      }
      listeners.add(unlisten)
      return unlisten
    },
    sessionLock: (key) => sessionLockOnPostgres(directUrl, key, onPoolError),
    close: async () => {
      await Promise.all([...listeners].map((unlisten) => unlisten()))
      await db.destroy()
    },
  }
}

const LISTEN_RETRY_MS = 1000

/**
 * LISTEN needs a session of its own that stays open (a pooled client would be handed to queries),
 * hence the direct URL: behind a pooler in transaction mode the LISTEN would stay behind on
 * whichever server connection ran it, and its notifications would never reach this client.
 * A lost connection is re-opened after a pause; the caller's polling covers the gap.
 */
function listenOnPostgres(
  url: string,
  channel: string,
  onNotify: (payload?: string) => void,
  onError?: (error: Error) => void,
): Unlisten {
  let client: pg.Client | undefined
  let retry: NodeJS.Timeout | undefined
  let stopped = false

  const connect = async () => {
    const candidate = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 })
    let lost = false
    const onLost = (error?: Error) => {
      if (error) onError?.(error)
      if (lost) return
      lost = true
      if (client === candidate) client = undefined
      candidate.end().catch(() => {})
      if (stopped || retry) return
      retry = setTimeout(() => {
        retry = undefined
        void connect()
      }, LISTEN_RETRY_MS)
      retry.unref()
    }
    candidate.on('error', onLost)
    candidate.on('end', () => onLost())
    candidate.on('notification', (message) => {
      if (message.channel === channel) onNotify(message.payload)
    })
    try {
      await candidate.connect()
      await candidate.query(`listen ${candidate.escapeIdentifier(channel)}`)
    } catch (error) {
      onLost(error as Error)
      return
    }
    if (stopped) {
      lost = true
      await candidate.end()
      return
    }
    client = candidate
    onNotify()
  }

  void connect()
  return async () => {
    stopped = true
    clearTimeout(retry)
    await client?.end().catch(() => {})
  }
}

/**
 * The lock lives as long as its connection: ending the connection releases it, and so does the
 * server when the connection is lost, after which `held` turns false.
 */
async function sessionLockOnPostgres(
  url: string,
  key: bigint,
  onError?: (error: Error) => void,
): Promise<SessionLock | undefined> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000, keepAlive: true })
  let held = false
  client.on('error', (error) => {
    held = false
    onError?.(error)
  })
  client.on('end', () => {
    held = false
  })
  try {
    await client.connect()
    const { rows } = await client.query<{ locked: boolean }>(
      'select pg_try_advisory_lock($1::bigint) as locked',
      [key.toString()],
    )
    held = rows[0]?.locked === true
  } catch (error) {
    await client.end().catch(() => {})
    throw error
  }
  if (!held) {
    await client.end().catch(() => {})
    return undefined
  }
  return {
    get held() {
      return held
    },
    release: async () => {
      if (held) {
        held = false
        // Unlocked before the connection ends, so that another instance asking right after finds it free.
        await client.query('select pg_advisory_unlock($1::bigint)', [key.toString()]).catch(() => {})
      }
      await client.end().catch(() => {})
    },
  }
}
