import type { PostgresPool, PostgresPoolClient } from 'kysely'
import type pg from 'pg'

/** Distinct statement texts prepared per connection unless configured (DATABASE_PREPARED_STATEMENTS). */
export const DEFAULT_PREPARED_STATEMENTS = 500

// Changes, also when they open a WITH (a change and its event) or a marking comment (the audit
// batches' insert, db/across-organizations.ts): their plans do not depend on the values. DDL and
// transaction control always run unnamed.
const CHANGE = /^\s*(\/\*[^*]*\*\/\s*)*(with\s+\w+\s+as\s+\(\s*)?(insert|update|delete)\b/i
// A statement returning `*` stays unnamed: a column added by a migration while this instance runs
// would change its result type, which PostgreSQL refuses for a prepared statement until the
// connection closes.
const RETURNS_EVERY_COLUMN = /\breturning\s+\*/i

// Reads whose plan suits every value (a primary-key lookup), declared by the code that builds them.
// Other reads are planned on every call: after a few runs of a prepared statement PostgreSQL may
// settle on one generic plan, which for a search or a filter on skewed data can be far worse for
// some values than the plan made for them.
const preparableReads = new Set<string>()

/** Lets a read of fixed shape be prepared (precompiledQuery does it for the hottest reads). */
export function allowPreparing(text: string): void {
  preparableReads.add(text)
}

/**
 * Gives each distinct change, and each read allowed above, a name, at most `limit` of them per
 * process: a named statement is parsed and planned once per connection and then reused, where an
 * unnamed one is parsed and planned on every call (for a one-row read, planning costs more than
 * executing). A name is never reused for another text, so past the limit further texts simply run
 * unnamed; the limit bounds what each server session keeps.
 */
export function statementNamer(limit: number): (text: string) => string | undefined {
  const names = new Map<string, string>()
  return (text) => {
    const known = names.get(text)
    if (known !== undefined || names.size >= limit) return known
    if (!preparableReads.has(text) && (!CHANGE.test(text) || RETURNS_EVERY_COLUMN.test(text)))
      return undefined
    const name = `ehr_${names.size}`
    names.set(text, name)
    return name
  }
}

/**
 * The pool as Kysely sees it, with the statements named above sent as prepared statements.
 * One wrapper per pg client, since Kysely keys its connections by the client object.
 */
export function preparingPool(pool: pg.Pool, nameOf: (text: string) => string | undefined): PostgresPool {
  const wrappers = new WeakMap<pg.PoolClient, PostgresPoolClient>()
  const wrap = (client: pg.PoolClient): PostgresPoolClient => {
    const query = (text: string, values?: unknown[]) => {
      const name = nameOf(text)
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
