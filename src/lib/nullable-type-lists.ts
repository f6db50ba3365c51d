type Schema = Record<string, unknown>

const isObject = (value: unknown): value is Schema =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

/** `{type: 'null'}` and nothing else but annotations. */
const isNullOnly = (schema: unknown): boolean =>
  isObject(schema) && schema.type === 'null' && !('anyOf' in schema) && !('oneOf' in schema)

/** A branch that one JSON type tells apart from null: a single `type` and no alternatives of its own. */
const isSingleTyped = (schema: unknown): schema is Schema =>
  isObject(schema) &&
  typeof schema.type === 'string' &&
  schema.type !== 'null' &&
  !('anyOf' in schema) &&
  !('oneOf' in schema) &&
  !('allOf' in schema) &&
  !('$ref' in schema)

/**
 * The response schema as the serializer should read it: every "T or null" (`anyOf: [T, {type:
 * 'null'}]`, as `Nullable` writes it) becomes `T` with `type: [T's type, 'null']`. The JSON is the
 * same, but fast-json-stringify serializes an `anyOf` by running a validator on each alternative
 * for every value (and a failed one allocates its errors), where a type list is one `=== null`
 * test: a page of twenty patients has some two hundred such fields. Validation and the API
 * description keep reading the original schema.
 */
export function withNullableTypeLists<T>(schema: T): T {
  return convert(schema, new Map()) as T
}

function convert(value: unknown, done: Map<unknown, unknown>): unknown {
  if (Array.isArray(value)) return value.map((item) => convert(item, done))
  if (!isObject(value)) return value
  const known = done.get(value)
  if (known) return known
  const { anyOf, ...rest } = value
  let converted: Schema
  if (Array.isArray(anyOf) && anyOf.length === 2 && anyOf.some(isNullOnly) && anyOf.some(isSingleTyped)) {
    const typed = anyOf.find(isSingleTyped) as Schema
    converted = { ...convertProperties(typed, done), ...rest, type: [typed.type, 'null'] }
  } else {
    converted = convertProperties(value, done)
  }
  done.set(value, converted)
  return converted
}

function convertProperties(schema: Schema, done: Map<unknown, unknown>): Schema {
  const converted: Schema = {}
  for (const [key, child] of Object.entries(schema)) converted[key] = convert(child, done)
  return converted
}
