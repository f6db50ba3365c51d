import type { Compilable, CompiledQuery } from 'kysely'
import type { Db } from './database.js'
import { allowPreparing } from './prepared-statements.js'

const SLOT = Symbol('parameter slot')
type Slot = { readonly [SLOT]: number }
const isSlot = (value: unknown): value is Slot => typeof value === 'object' && value !== null && SLOT in value

/**
 * A query of fixed shape that Kysely builds and compiles once; each call only fills in its
 * parameter values. Worth it for the hottest reads, where building and compiling a query on every
 * call costs about as much as running it. `build` may use its arguments as values only (never in
 * conditions of its own), since it runs once with placeholders. Its plan must suit every value (a
 * lookup by key), since on PostgreSQL it is prepared and its plan reused.
 */
export function precompiledQuery<A extends readonly unknown[], R>(
  build: (db: Db, ...args: A) => Compilable<R>,
): (db: Db, ...args: A) => Promise<R[]> {
  let compiled: CompiledQuery<R> | undefined
  return async (db, ...args) => {
    if (!compiled) {
      const slots = args.map((_, index): Slot => ({ [SLOT]: index })) as unknown as A
      compiled = build(db, ...slots).compile()
      allowPreparing(compiled.sql)
    }
    const parameters = compiled.parameters.map((value) => (isSlot(value) ? args[value[SLOT]] : value))
    const result = await db.executeQuery<R>({ ...compiled, parameters })
    return result.rows
  }
}
