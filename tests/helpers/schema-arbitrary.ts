import fc from 'fast-check'

/** The subset of JSON Schema the service's TypeBox schemas produce in the OpenAPI document. */
export interface JsonSchema {
  type?: string
  anyOf?: JsonSchema[]
  enum?: unknown[]
  const?: unknown
  format?: string
  pattern?: string
  minLength?: number
  maxLength?: number
  minimum?: number
  maximum?: number
  exclusiveMinimum?: number
  exclusiveMaximum?: number
  multipleOf?: number
  items?: JsonSchema
  minItems?: number
  maxItems?: number
  uniqueItems?: boolean
  properties?: Record<string, JsonSchema>
  required?: string[]
  additionalProperties?: boolean | JsonSchema
  minProperties?: number
  default?: unknown
}

export interface GeneratorOptions {
  /** Values for `format: uri` strings (URLs whose hosts the test's DNS stub knows, or none). */
  uris: readonly string[]
  /** Values that object properties of these names mostly take (ids of existing records, say). */
  known?: Readonly<Record<string, unknown>>
}

const DAY_MS = 86_400_000
const EARLIEST = Date.UTC(1900, 0, 1)

// Dates around today, where most of the service's rules look (births in the past, bookings
// ahead), and the far ends a date format allows.
const dateArbitrary = () =>
  fc.oneof(
    {
      weight: 5,
      arbitrary: fc
        .integer({ min: Math.floor(EARLIEST / DAY_MS), max: Math.floor(Date.now() / DAY_MS) + 400 })
        .map((day) => new Date(day * DAY_MS).toISOString().slice(0, 10)),
    },
    {
      weight: 1,
      arbitrary: fc.constantFrom('0001-01-01', '1000-06-15', '2024-02-29', '2038-01-19', '9999-12-31'),
    },
  )
const dateTimeArbitrary = () =>
  fc.oneof(
    {
      weight: 5,
      arbitrary: fc
        .integer({ min: EARLIEST, max: Date.now() + 400 * DAY_MS })
        .map((ms) => new Date(ms).toISOString()),
    },
    {
      weight: 1,
      arbitrary: fc.constantFrom(
        '0001-01-01T00:00:00Z',
        '9999-12-31T23:59:59Z',
        '2024-02-29T12:00:00+14:00',
        '2024-06-01T00:00:00.123456-12:00',
      ),
    },
  )

const fits = (schema: JsonSchema) => (value: string) =>
  value.length >= (schema.minLength ?? 0) && value.length <= (schema.maxLength ?? Number.POSITIVE_INFINITY)

/**
 * Text of exactly the longest length allowed, in one-byte, two-byte and astral characters (JSON
 * Schema counts code points: an emoji is one character there, two UTF-16 units in JavaScript).
 */
const longestTexts = (schema: JsonSchema): fc.Arbitrary<string>[] =>
  schema.maxLength === undefined
    ? []
    : [fc.constantFrom('x', 'é', '💉').map((character) => character.repeat(schema.maxLength ?? 0))]

function stringArbitrary(schema: JsonSchema, options: GeneratorOptions): fc.Arbitrary<string> {
  switch (schema.format) {
    case 'date':
      return dateArbitrary()
    case 'date-time':
      return dateTimeArbitrary()
    case 'email':
      return fc.emailAddress({ size: 'small' }).filter(fits(schema))
    case 'uri':
      return options.uris.length > 0 ? fc.constantFrom(...options.uris) : fc.webUrl()
    case 'binary':
      return fc.string({ maxLength: 64 })
  }
  if (schema.pattern) {
    // `\S` (not blank) is the common pattern: any text with something in it, unicode included.
    if (schema.pattern === '\\S')
      return fc.oneof(
        fc
          .string({
            unit: fc.oneof(
              fc.constantFrom('a', 'Z', ' ', 'é'),
              fc.string({ unit: 'grapheme', minLength: 1, maxLength: 1 }),
            ),
            minLength: 1,
            maxLength: 40,
          })
          .map((text) => (/\S/.test(text) ? text : `${text}x`))
          .filter(fits(schema)),
        ...longestTexts(schema),
      )
    return fc.stringMatching(new RegExp(schema.pattern), { size: 'small' }).filter(fits(schema))
  }
  const minLength = schema.minLength ?? 0
  const maxLength = Math.min(schema.maxLength ?? 40, Math.max(minLength, 40))
  return fc.oneof(fc.string({ unit: 'grapheme', minLength, maxLength }), ...longestTexts(schema))
}

function numberArbitrary(schema: JsonSchema, integer: boolean): fc.Arbitrary<number> {
  const low =
    schema.exclusiveMinimum !== undefined
      ? schema.exclusiveMinimum + (integer ? 1 : 0.001)
      : (schema.minimum ?? (integer ? -1_000_000 : -1e9))
  const high =
    schema.exclusiveMaximum !== undefined
      ? schema.exclusiveMaximum - (integer ? 1 : 0.001)
      : (schema.maximum ?? (integer ? 1_000_000 : 1e9))
  const boundaries = fc.constantFrom(low, high)
  if (schema.multipleOf !== undefined) {
    const step = schema.multipleOf
    return fc
      .integer({ min: Math.ceil(low / step), max: Math.floor(high / step) })
      .map((n) => Number((n * step).toFixed(6)))
  }
  if (integer) return fc.oneof(fc.integer({ min: low, max: high }), boundaries)
  return fc.oneof(fc.double({ min: low, max: high, noNaN: true, noDefaultInfinity: true }), boundaries)
}

/** Values that the schema accepts (as far as JSON Schema says; the service's own rules may still refuse them). */
export function validValue(schema: JsonSchema, options: GeneratorOptions): fc.Arbitrary<unknown> {
  if (schema.const !== undefined) return fc.constant(schema.const)
  if (schema.enum) return fc.constantFrom(...schema.enum)
  if (schema.anyOf) return fc.oneof(...schema.anyOf.map((branch) => validValue(branch, options)))
  switch (schema.type) {
    case 'string':
      return stringArbitrary(schema, options)
    case 'integer':
      return numberArbitrary(schema, true)
    case 'number':
      return numberArbitrary(schema, false)
    case 'boolean':
      return fc.boolean()
    case 'null':
      return fc.constant(null)
    case 'array': {
      const item = validValue(schema.items ?? {}, options)
      const constraints = { minLength: schema.minItems ?? 0, maxLength: Math.min(schema.maxItems ?? 4, 4) }
      constraints.maxLength = Math.max(constraints.maxLength, constraints.minLength)
      return schema.uniqueItems
        ? fc.uniqueArray(item, { ...constraints, selector: (value) => JSON.stringify(value) })
        : fc.array(item, constraints)
    }
    case 'object': {
      const properties = schema.properties ?? {}
      const model = Object.fromEntries(
        Object.entries(properties).map(([name, property]) => {
          const valid = validValue(property, options)
          if (options.known === undefined || !(name in options.known)) return [name, valid]
          return [name, fc.oneof({ weight: 4, arbitrary: fc.constant(options.known[name]) }, valid)]
        }),
      )
      const record = fc.record(model, {
        requiredKeys: (schema.required ?? []).filter((n) => n in properties),
      })
      return schema.minProperties
        ? record.filter((value) => Object.keys(value).length >= (schema.minProperties ?? 0))
        : record
    }
    default:
      return fc.jsonValue({ maxDepth: 2 })
  }
}

const types = (schema: JsonSchema): string[] =>
  schema.anyOf ? schema.anyOf.flatMap(types) : schema.type ? [schema.type] : []

/** Values of the wrong JSON type for the schema. */
function wrongType(schema: JsonSchema): fc.Arbitrary<unknown> {
  const allowed = new Set(types(schema))
  const candidates: Array<[string, fc.Arbitrary<unknown>]> = [
    ['string', fc.constantFrom('', 'abc', '12', 'true', 'null', '1e309')],
    ['integer', fc.constantFrom(0, -1, 7, 2 ** 31, Number.MAX_SAFE_INTEGER)],
    ['number', fc.constantFrom(1.5, -0.25, 1e300)],
    ['boolean', fc.boolean()],
    ['null', fc.constant(null)],
    ['array', fc.constantFrom([], [1], ['a', null])],
    ['object', fc.constantFrom({}, { a: 1 })],
  ]
  const wrong = candidates.filter(
    ([type]) => !allowed.has(type) && !(type === 'integer' && allowed.has('number')),
  )
  return fc.oneof(...wrong.map(([, arbitrary]) => arbitrary))
}

/** Strings that look close to valid but are not: bad dates, edge unicode, control characters, overlong text. */
const oddStrings = (schema: JsonSchema) =>
  fc.oneof(
    fc.constantFrom(
      '',
      ' ',
      '2023-02-30',
      '2023-13-01',
      '0000-00-00',
      '99999-01-01',
      '1899-12-31',
      '2999-01-01',
      '2024-01-01T25:61:00Z',
      'not-a-date',
      'nul\u0000byte',
      '\u202eRTL override',
      '💉🩺',
      '\ud800',
      "'; drop table patients; --",
      '%00',
      '../../etc/passwd',
      'x'.repeat(10_000),
    ),
    fc.constant('y'.repeat((schema.maxLength ?? 255) + 1)),
    fc.string({ unit: 'binary', maxLength: 20 }),
  )

/** Numbers just outside the schema's bounds, fractions for integers, and extremes. */
const oddNumbers = (schema: JsonSchema) => {
  const values: number[] = [-1, 0, 0.5, 1e21, -1e21, Number.MAX_SAFE_INTEGER + 2, 2 ** 63]
  if (schema.minimum !== undefined) values.push(schema.minimum - 1)
  if (schema.maximum !== undefined) values.push(schema.maximum + 1)
  if (schema.exclusiveMinimum !== undefined) values.push(schema.exclusiveMinimum)
  return fc.constantFrom(...values)
}

/** A value close to what the schema accepts, usually one the schema refuses. */
export function nearMissValue(schema: JsonSchema, options: GeneratorOptions): fc.Arbitrary<unknown> {
  const kinds = types(schema)
  const arbitraries: fc.Arbitrary<unknown>[] = [wrongType(schema), oddStrings(schema)]
  if (kinds.includes('integer') || kinds.includes('number')) arbitraries.push(oddNumbers(schema))
  const object =
    schema.anyOf?.find((branch) => branch.type === 'object') ??
    (schema.type === 'object' ? schema : undefined)
  if (object?.properties) arbitraries.push(nearMissObject(object, options))
  const array =
    schema.anyOf?.find((branch) => branch.type === 'array') ?? (schema.type === 'array' ? schema : undefined)
  if (array?.items) {
    arbitraries.push(
      fc.array(nearMissValue(array.items, options), { minLength: 1, maxLength: 2 }),
      fc.constant(Array.from({ length: (array.maxItems ?? 100) + 1 }, () => null)),
    )
  }
  return fc.oneof(...arbitraries)
}

/** A valid object with one thing wrong: a required field missing, a field unknown, or one field a near miss. */
export function nearMissObject(schema: JsonSchema, options: GeneratorOptions): fc.Arbitrary<unknown> {
  const properties = Object.entries(schema.properties ?? {})
  const base = validValue(schema, options) as fc.Arbitrary<Record<string, unknown>>
  const mutations: fc.Arbitrary<unknown>[] = [
    fc
      .tuple(
        base,
        fc.constantFrom('unknownField', 'firstname', '__proto__', 'constructor'),
        fc.jsonValue({ maxDepth: 1 }),
      )
      .map(([value, name, extra]) => {
        const copy = { ...value }
        Object.defineProperty(copy, name, {
          value: extra,
          enumerable: true,
          configurable: true,
          writable: true,
        })
        return copy
      }),
  ]
  const required = schema.required ?? []
  if (required.length > 0)
    mutations.push(
      fc.tuple(base, fc.constantFrom(...required)).map(([value, name]) => {
        const { [name]: _dropped, ...rest } = value
        return rest
      }),
    )
  if (properties.length > 0)
    mutations.push(
      fc
        .constantFrom(...properties)
        .chain(([name, property]) =>
          fc.tuple(base, nearMissValue(property, options)).map(([value, odd]) => ({ ...value, [name]: odd })),
        ),
    )
  return fc.oneof(...mutations)
}
