import type { TSchema } from '@sinclair/typebox'
import { AppError } from '../errors.js'
import { assertVersion } from './versions.js'

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

/**
 * RFC 7396 JSON Merge Patch: members of the patch replace the target's, `null` removes one, nested
 * objects merge member by member, and anything else (arrays included) replaces the target whole.
 */
export function applyMergePatch(target: unknown, patch: unknown): unknown {
  if (!isPlainObject(patch)) return patch
  const result: Record<string, unknown> = isPlainObject(target) ? { ...target } : {}
  for (const [name, value] of Object.entries(patch)) {
    if (value === null) delete result[name]
    else result[name] = applyMergePatch(result[name], value)
  }
  return result
}

interface SchemaShape {
  type?: string
  properties?: Record<string, SchemaShape>
  items?: SchemaShape
  anyOf?: SchemaShape[]
}

/**
 * `value` (a record as the API shows it) cut down to what `schema` (a request body) declares: the
 * body a client would send to write the record as it is. Nulls are left out, since the API shows
 * an absent optional value as null and a body leaves it out.
 */
export function projectOnto(schema: TSchema, value: unknown): unknown {
  const shape = schema as SchemaShape
  const objectShape = shape.properties ? shape : shape.anyOf?.find((option) => option.properties)
  if (objectShape?.properties && isPlainObject(value)) {
    const projected: Record<string, unknown> = {}
    for (const [name, property] of Object.entries(objectShape.properties)) {
      const member = value[name]
      if (member !== null && member !== undefined) projected[name] = projectOnto(property as TSchema, member)
    }
    return projected
  }
  const arrayShape = shape.items ? shape : shape.anyOf?.find((option) => option.items)
  if (arrayShape?.items && Array.isArray(value)) {
    return value.map((item) => projectOnto(arrayShape.items as TSchema, item))
  }
  return value
}

// A merge without If-Match is made against the version just read; if another write lands in
// between, reading and merging again is what the client would do, so a few rounds are made here.
const UNCONDITIONAL_PATCH_ROUNDS = 3

/**
 * A PATCH: reads the record, merges the patch into the body that would write it as it is,
 * validates the result like a full replacement and writes it on condition that the record is
 * still at the version read. With `expected` (If-Match) a record at another version is 412 at once.
 */
export async function patchRecord<R extends { version: number }, B, T>(steps: {
  patch: unknown
  expected: number | undefined
  read: () => Promise<R>
  bodyOf: (record: R) => unknown
  validate: (merged: unknown) => B
  write: (body: B, version: number) => Promise<T>
}): Promise<T> {
  for (let round = 1; ; round++) {
    const record = await steps.read()
    if (steps.expected !== undefined) assertVersion(record.version, steps.expected)
    const body = steps.validate(applyMergePatch(steps.bodyOf(record), steps.patch))
    try {
      return await steps.write(body, record.version)
    } catch (error) {
      const raced = error instanceof AppError && error.status === 412 && steps.expected === undefined
      if (!raced || round >= UNCONDITIONAL_PATCH_ROUNDS) throw error
    }
  }
}
