import type { Compilable, CompiledQuery } from 'kysely'
import type { Db } from './database.js'
import { rememberDeclared } from './prepared-statements.js'

const SLOT = Symbol('parameter slot')
/** Where a parameter's value comes from: an argument, or one field of a record argument. */
type Slot = { readonly [SLOT]: readonly [index: number, field?: string] }
const isSlot = (value: unknown): value is Slot => typeof value === 'object' && value !== null && SLOT in value

/** A plain object argument (a row to insert): each of its fields is a parameter of its own. */
const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && Object.getPrototypeOf(value) === Object.prototype

/** The fields of a record that take part (one left undefined is left out, as Kysely leaves it out). */
const fieldsOf = (record: Record<string, unknown>) =>
  Object.keys(record).filter((field) => record[field] !== undefined)

/** What decides the statement's text: the fields of each record argument. */
const shapeOf = (args: readonly unknown[]) =>
  args.map((arg) => (isRecord(arg) ? fieldsOf(arg).join(',') : '')).join(';')

function placeholders(args: readonly unknown[]): unknown[] {
  return args.map((arg, index): unknown =>
    isRecord(arg)
      ? Object.fromEntries(fieldsOf(arg).map((field): [string, Slot] => [field, { [SLOT]: [index, field] }]))
      : ({ [SLOT]: [index] } satisfies Slot),
  )
}

function slotValue(args: readonly unknown[], [index, field]: Slot[typeof SLOT]): unknown {
  const arg = args[index]
  return field === undefined ? arg : (arg as Record<string, unknown>)[field]
}

/**
 * A query that Kysely builds and compiles once per shape; each call only fills in its parameter
 * values. For the statements run so often that building and compiling them on every call would cost
 * about as much as running them (the patients' fast path, the clinical inserts of a transaction
 * Bundle). `build` may use its arguments as values only (never in conditions of its own), since it
 * runs once with placeholders. A plain object argument (a row to insert) is a value per field: the
 * statement is compiled once for each set of fields it is called with.
 */
export function precompiledQuery<A extends readonly unknown[], R>(
  build: (db: Db, ...args: A) => Compilable<R>,
): (db: Db, ...args: A) => Promise<R[]> {
  const compiledByShape = new Map<string, CompiledQuery<R>>()
  return async (db, ...args) => {
    const shape = shapeOf(args)
    let compiled = compiledByShape.get(shape)
    if (!compiled) {
      compiled = build(db, ...(placeholders(args) as unknown as A)).compile()
      // Then run on any database, prepared wherever it was declared so.
      rememberDeclared(compiled)
      compiledByShape.set(shape, compiled)
    }
    const parameters = compiled.parameters.map((value) =>
      isSlot(value) ? slotValue(args, value[SLOT]) : value,
    )
    const result = await db.executeQuery<R>({ ...compiled, parameters })
    return result.rows
  }
}
