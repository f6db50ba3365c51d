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
import type { PgliteThread } from './pglite-thread-client.js'

const MUTATING_COMMAND = /^\s*(insert|update|delete|merge|with)\b/i

class PgliteConnection implements DatabaseConnection {
  constructor(private readonly pglite: PgliteThread) {}

  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    const result = await this.pglite.query<R>(query.sql, query.parameters)
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
 * transactions would interleave on the one session. Each statement is answered by PGlite's thread,
 * so the event loop serves the process's other events between any two of them.
 */
class PgliteDriver implements Driver {
  private readonly connection: PgliteConnection
  private queue: Promise<void> = Promise.resolve()
  private release: (() => void) | undefined

  constructor(pglite: PgliteThread) {
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
    release?.()
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

/** A Kysely dialect over PGlite on its thread. Closing the thread is the caller's job. */
export class PgliteDialect implements Dialect {
  constructor(private readonly pglite: PgliteThread) {}

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
