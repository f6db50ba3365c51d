import {
  type CompiledQuery,
  DeleteQueryNode,
  InsertQueryNode,
  type OperationNode,
  type OperationNodeSource,
  PostgresDialect,
  type PostgresDialectConfig,
  type PostgresPool,
  type PostgresPoolClient,
  PostgresQueryCompiler,
  type QueryCompiler,
  type QueryId,
  type RootOperationNode,
  SelectAllNode,
  UpdateQueryNode,
} from 'kysely'
import type pg from 'pg'

/** Distinct statement texts prepared per connection unless configured (DATABASE_PREPARED_STATEMENTS). */
export const DEFAULT_PREPARED_STATEMENTS = 500

// What is prepared is decided from the query as built, never from its SQL text:
// - a change that Kysely builds (insertInto, updateTable, deleteFrom), since its plan does not
//   depend on the values; unless it returns every column (`returningAll()`): a column added by a
//   migration while this instance runs would change its result type, which PostgreSQL refuses for
//   a prepared statement until the connection closes;
// - any other statement only when the code that builds it declares it with `prepared()`: a change
//   written in SQL, or a read whose plan suits every value (a primary-key lookup). Other reads are
//   planned on every call: after a few runs of a prepared statement PostgreSQL may settle on one
//   generic plan, which for a search or a filter on skewed data can be far worse for some values
//   than the plan made for them.
// DDL and transaction control are neither, and always run unnamed.

const declared = new WeakSet<OperationNode>()
// The texts of declared statements, for every connection: a statement compiled once (the patients
// area's fast path) may run on another database than the one that compiled it (a read replica).
const declaredTexts = new Set<string>()

/**
 * Declares a query (built with Kysely or written with `sql`) a prepared statement on PostgreSQL:
 * parsed and planned once per connection, its plan then reused for every value. Returns the query.
 * The mark is on the query's operation node, which Kysely passes to the compiler as it is while
 * the database has no plugin that rewrites queries.
 */
export function prepared<Q extends OperationNodeSource>(query: Q): Q {
  declared.add(query.toOperationNode())
  return query
}

/**
 * Records for every database the text of `compiled` if its query was declared with `prepared()`;
 * whether it was. A query compiled once may have been compiled by a database that prepares nothing.
 */
export function rememberDeclared(compiled: CompiledQuery): boolean {
  if (!declared.has(compiled.query)) return false
  declaredTexts.add(compiled.sql)
  return true
}

const isChange = (node: OperationNode): node is InsertQueryNode | UpdateQueryNode | DeleteQueryNode =>
  InsertQueryNode.is(node) || UpdateQueryNode.is(node) || DeleteQueryNode.is(node)

/** Whether `node` is a change returning every column of what it changed (`returning *`). */
export function returnsEveryColumn(node: OperationNode): boolean {
  const first = isChange(node) ? node.returning?.selections[0] : undefined
  return first !== undefined && SelectAllNode.is(first.selection)
}

/**
 * The names of one database's prepared statements, at most `limit` of them: a named statement is
 * parsed and planned once per connection and then reused, where an unnamed one is parsed and
 * planned on every call (for a one-row read, planning costs more than executing). A name is never
 * reused for another text, so past the limit further texts simply run unnamed; the limit bounds
 * what each server session keeps.
 */
export class StatementNames {
  private readonly names = new Map<string, string>()

  constructor(private readonly limit: number) {}

  /** Names `text`, if it has no name yet and the limit allows one. */
  name(text: string): string | undefined {
    const known = this.names.get(text)
    if (known !== undefined || this.names.size >= this.limit) return known
    const name = `ehr_${this.names.size}`
    this.names.set(text, name)
    return name
  }

  /** The name `text` runs under: the one given when it was compiled, or, if declared, a new one. */
  nameOf(text: string): string | undefined {
    return this.names.get(text) ?? (declaredTexts.has(text) ? this.name(text) : undefined)
  }
}

/** Compiles for PostgreSQL, naming the statements to prepare as it meets them. */
class PreparingQueryCompiler extends PostgresQueryCompiler {
  constructor(private readonly names: StatementNames) {
    super()
  }

  override compileQuery(node: RootOperationNode, queryId: QueryId): CompiledQuery {
    const compiled = super.compileQuery(node, queryId)
    if (!rememberDeclared(compiled) && isChange(node) && !returnsEveryColumn(node))
      this.names.name(compiled.sql)
    return compiled
  }
}

/** PostgreSQL through `pool`, with the statements chosen above sent as prepared statements. */
export class PreparingPostgresDialect extends PostgresDialect {
  readonly names: StatementNames

  constructor(pool: pg.Pool, limit: number) {
    const names = new StatementNames(limit)
    super({ pool: preparingPool(pool, names) } satisfies PostgresDialectConfig)
    this.names = names
  }

  override createQueryCompiler(): QueryCompiler {
    return new PreparingQueryCompiler(this.names)
  }
}

/**
 * The pool as Kysely sees it, with the statements named above sent as prepared statements.
 * One wrapper per pg client, since Kysely keys its connections by the client object.
 */
function preparingPool(pool: pg.Pool, names: StatementNames): PostgresPool {
  const wrappers = new WeakMap<pg.PoolClient, PostgresPoolClient>()
  const wrap = (client: pg.PoolClient): PostgresPoolClient => {
    const query = (text: string, values?: unknown[]) => {
      const name = names.nameOf(text)
      return client.query(name ? { name, text } : text, values)
    }
    // Kysely passes a cursor only to stream, which needs the dialect's `cursor` option (not set).
    return { query: query as unknown as PostgresPoolClient['query'], release: () => client.release() }
  }
  return {
    connect: async () => {
      const client = await pool.connect()
      let wrapper = wrappers.get(client)
      if (!wrapper) {
        wrapper = wrap(client)
        wrappers.set(client, wrapper)
      }
      return wrapper
    },
    end: () => pool.end(),
  }
}
