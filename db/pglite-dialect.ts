import type { PGlite } from '@electric-sql/pglite'
import {
  CompiledQuery,
  type DatabaseConnection,
  type Dialect,
  type Driver,
  type Kysely,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  type QueryResult,
  type TransactionSettings,
} from 'kysely'

// Long enough for a few statements (a simple one takes 0.1–1.5 ms), short against webhook latency.
const TURN_BUDGET_MS = 2

const MUTATING_COMMAND = /^\s*(insert|update|delete|merge|with)\b/i

class PgliteConnection implements DatabaseConnection {
  constructor(private readonly pglite: PGlite) {}

  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    const result = await this.pglite.query<R>(query.sql, [...query.parameters])
    return {
      rows: result.rows,
      numAffectedRows:
        MUTATING_COMMAND.test(query.sql) && result.affectedRows !== undefined
          ? BigInt(result.affectedRows)
          : undefined,
    }
  }

  // biome-ignore lint/correctness/useYield: streaming is not offered by this dialect
  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('PGlite dialect does not support streaming queries')
  }
}

/**
 * PGlite is a single connection. Kysely may ask for several at once (a transaction and a query
 * beside it), so connections are handed out one at a time; otherwise statements of different
 * transactions would interleave on the one session.
 *
 * PGlite also runs in this thread and answers without waiting on any I/O, so callers would be
 * served back to back in one turn of the event loop for as long as there are any, while nothing
 * else (webhook answers, new requests, timers) is read. So once TURN_BUDGET_MS have passed since
 * the connection last waited for a turn, it is handed to the next caller on the next turn:
 * statements interleave fairly with the process's network events, and neither the webhook worker
 * nor the API waits behind a run of the other's. Handing it over after every statement cost the
 * API about 7% of its throughput in turns of the loop; with the budget the cost was within noise.
 */
class PgliteDriver implements Driver {
  private readonly connection: PgliteConnection
  private queue: Promise<void> = Promise.resolve()
  private release: (() => void) | undefined
  private turnStarted = 0

  constructor(pglite: PGlite) {
    this.connection = new PgliteConnection(pglite)
  }

  async init(): Promise<void> {}

  async acquireConnection(): Promise<DatabaseConnection> {
    const previous = this.queue
    let release!: () => void
    this.queue = new Promise<void>((resolve) => {
      release = resolve
    })
    await previous
    this.release = release
    return this.connection
  }

  async releaseConnection(): Promise<void> {
    const release = this.release
    this.release = undefined
    if (!release) return
    if (performance.now() - this.turnStarted < TURN_BUDGET_MS) {
      release()
      return
    }
    setImmediate(() => {
      this.turnStarted = performance.now()
      release()
    })
  }

  async beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    const mode = [
      settings.isolationLevel ? `isolation level ${settings.isolationLevel}` : '',
      settings.accessMode ?? '',
    ].join(' ')
    await connection.executeQuery(CompiledQuery.raw(`start transaction ${mode}`))
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('commit'))
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('rollback'))
  }

  async savepoint(connection: DatabaseConnection, name: string): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw(`savepoint ${quoteIdentifier(name)}`))
  }

  async rollbackToSavepoint(connection: DatabaseConnection, name: string): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw(`rollback to savepoint ${quoteIdentifier(name)}`))
  }

  async releaseSavepoint(connection: DatabaseConnection, name: string): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw(`release savepoint ${quoteIdentifier(name)}`))
  }

  async destroy(): Promise<void> {}
}

function quoteIdentifier(name: string): string {
  return `"${name.replaceAll('"', '""')}"`
}

/** A Kysely dialect over an open PGlite instance. Closing the instance is the caller's job. */
export class PgliteDialect implements Dialect {
  constructor(private readonly pglite: PGlite) {}

  createAdapter() {
    return new PostgresAdapter()
  }

  createDriver(): Driver {
    return new PgliteDriver(this.pglite)
  }

  createQueryCompiler() {
    return new PostgresQueryCompiler()
  }

  createIntrospector(db: Kysely<unknown>) {
    return new PostgresIntrospector(db)
  }
}
