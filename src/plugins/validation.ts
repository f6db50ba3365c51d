import { Ajv, type ErrorObject, type Options } from 'ajv'
import addFormats from 'ajv-formats'
import type { FastifyPluginAsync, FastifySchemaCompiler } from 'fastify'
import fp from 'fastify-plugin'
import { jsonBodyParser } from '../http/json-body.js'
import { missingMembers } from '../http/validation-messages.js'
import { validatorOnFirstUse } from '../runtime/lazy-compile.js'

type Validator = ReturnType<FastifySchemaCompiler<unknown>>

/**
 * Marks a body schema that documents a streamed body (multipart uploads): the handler reads and
 * checks it part by part, so it is not validated up front (that would need it whole in memory).
 */
export const STREAMED_BODY = 'x-streamed'

function buildAjv(options: Options): Ajv {
  const ajv = new Ajv({
    // Unknown fields are an error, never silently dropped: a misspelled clinical field must not vanish.
    removeAdditional: false,
    useDefaults: true,
    // Every problem of a request at once, so a client fixes them in one round trip. Costs nothing
    // on a valid request; a failing one is summed up by the error handler (at most 20 problems).
    allErrors: true,
    // The failing schema on each error: the allowed values of a union of literals, a pattern's
    // description. Only the error objects change, not the checks.
    verbose: true,
    strict: true,
    ...options,
  })
  addFormats.default(ajv, { mode: 'full', formats: ['date', 'date-time', 'time', 'email', 'uri', 'uuid'] })
  return ajv
}

const issue = (instancePath: string, keyword: string, message: string): ErrorObject => ({
  instancePath,
  schemaPath: '#',
  keyword,
  params: {},
  message,
})

// PostgreSQL cannot store U+0000 in text: a NUL would otherwise reach the database and come back as
// a driver error. A UTF-16 surrogate without its pair (a JSON escape such as "\ud800") is no
// character at all: written as UTF-8 it would silently become U+FFFD, the text stored differing
// from the text sent. Neither belongs in clinical or administrative text, so any string that holds
// one, at any depth, is refused by validation like any other malformed value.
const NUL = '\u0000'
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/
const LONE_SURROGATES = new RegExp(LONE_SURROGATE, 'g')
const NUL_RULE = 'must not contain a NUL character (U+0000)'
const SURROGATE_RULE = 'must be valid Unicode text (not a lone UTF-16 surrogate such as \\ud800)'

const flawOf = (text: string) =>
  text.includes(NUL) ? NUL_RULE : LONE_SURROGATE.test(text) ? SURROGATE_RULE : undefined

interface FlawedString {
  /** Its JSON Pointer. */
  path: string
  /** The rule it breaks. */
  rule: string
}

const within = (segment: string | number, found: FlawedString | undefined) =>
  found && { ...found, path: `/${segment}${found.path}` }

/** The first string with a NUL or a lone surrogate, or undefined (its path built only once found). */
function flawedString(value: unknown): FlawedString | undefined {
  if (typeof value === 'string') {
    const rule = flawOf(value)
    return rule === undefined ? undefined : { path: '', rule }
  }
  if (typeof value !== 'object' || value === null) return undefined
  if (Array.isArray(value)) {
    for (let index = 0; index < value.length; index++) {
      const found = within(index, flawedString(value[index]))
      if (found) return found
    }
    return undefined
  }
  for (const key of Object.keys(value)) {
    // The member's name counts as input too; it is named without the offending code units.
    const rule = flawOf(key)
    if (rule) return { path: `/${key.replaceAll(NUL, '').replace(LONE_SURROGATES, '')}`, rule }
    const found = within(key, flawedString((value as Record<string, unknown>)[key]))
    if (found) return found
  }
  return undefined
}

// Query strings and path parameters arrive as text and are coerced; Ajv would read `+1`, `01`,
// `0x10`, `1e3` and ` 1` as numbers. Ids and page numbers are written one way only, so that one
// record has one URL (caches, audit records and logs agree on it) and nothing odd reaches a query.
const CANONICAL_INTEGER = /^(0|-?[1-9][0-9]*)$/

type SchemaNode = { type?: unknown; anyOf?: SchemaNode[]; items?: SchemaNode; properties?: object }

/** An integer, an array of integers, or a union of nothing else (null aside): text for it must be digits. */
const isInteger = (schema: SchemaNode | undefined): boolean =>
  schema !== undefined &&
  (schema.type === 'integer' ||
    (schema.type === 'array' && isInteger(schema.items)) ||
    (schema.anyOf?.some(isInteger) === true &&
      schema.anyOf.every((option) => option.type === 'null' || isInteger(option))))

/** The names of the integer members of a parameter schema (query, path, headers). */
function integerMembers(schema: SchemaNode): string[] {
  const properties = (schema.properties ?? {}) as Record<string, SchemaNode>
  return Object.entries(properties)
    .filter(([, member]) => isInteger(member))
    .map(([name]) => name)
}

function nonCanonicalInteger(data: unknown, names: readonly string[]): string | undefined {
  if (typeof data !== 'object' || data === null) return undefined
  for (const name of names) {
    const raw = (data as Record<string, unknown>)[name]
    const values = Array.isArray(raw) ? raw : [raw]
    if (values.some((value) => typeof value === 'string' && !CANONICAL_INTEGER.test(value))) return name
  }
  return undefined
}

/**
 * Runs `checks` on the raw input before the schema's own validator; the first finding is the one
 * problem reported about values: a value with a NUL, a lone surrogate or an odd integer is not
 * checked further. The schema is still asked which required members are missing, which decides
 * the error's code whatever else is wrong (see the error handler).
 */
function withChecks(compiled: Validator, checks: ((data: unknown) => ErrorObject | undefined)[]): Validator {
  const validate: Validator = (data) => {
    for (const check of checks) {
      const found = check(data)
      if (found) {
        validate.errors = [found, ...(compiled(data) ? [] : missingMembers(compiled.errors ?? []))]
        return false
      }
    }
    const result = compiled(data)
    validate.errors = compiled.errors
    return result
  }
  return validate
}

// Collecting every problem walks the whole body even past the first ones: for a body of a few
// thousand values that is nothing, for a megabyte of bad array items hundreds of milliseconds of
// the event loop. Past this many values, the first problem is reported alone.
const EVERY_PROBLEM_MAX_VALUES = 5_000

/** Whether `data` holds more than `limit` values (objects, arrays and scalars), counted up to that. */
function holdsMoreThan(data: unknown, limit: number): boolean {
  let count = 0
  const pending = [data]
  while (pending.length > 0) {
    if (++count > limit) return true
    const value = pending.pop()
    if (typeof value === 'object' && value !== null) pending.push(...Object.values(value))
  }
  return false
}

/**
 * A body is checked first by a validator that stops at the first problem (what a valid body costs
 * either way); a failing body of a reasonable size is checked again to report every problem.
 */
function everyProblemOfSmallBodies(firstProblem: Validator, every: Ajv, schema: unknown): Validator {
  let all: Validator | undefined
  const validate: Validator = (data) => {
    if (firstProblem(data)) return true
    validate.errors = firstProblem.errors
    if (holdsMoreThan(data, EVERY_PROBLEM_MAX_VALUES)) return false
    all ??= every.compile(schema as object)
    all(data)
    validate.errors = all.errors
    return false
  }
  return validate
}

const flawIssue = ({ path, rule }: FlawedString) => issue(path, 'text', rule)

const noFlawedString = (data: unknown) => {
  const found = flawedString(data)
  return found && flawIssue(found)
}

/**
 * Headers are checked in the members the schema declares only: those are the ones the service
 * reads through validation, and walking every header of every request (a bearer token is a
 * kilobyte) cost a measurable share of a read's time (docs/performance-log.md).
 */
const noFlawedStringAmong = (names: readonly string[]) => (data: unknown) => {
  if (typeof data !== 'object' || data === null) return undefined
  for (const name of names) {
    const found = flawedString((data as Record<string, unknown>)[name])
    if (found) return flawIssue({ ...found, path: `/${name}${found.path}` })
  }
  return undefined
}

/**
 * Request validation: query strings, path parameters and headers are text and are coerced to the
 * schema's types (integers only from canonical decimal text); JSON bodies are checked exactly as
 * sent (a string "42" is not an integer). No string anywhere may hold a NUL character or a lone
 * surrogate. Failures become VAL_001/VAL_002 in the error handler: 422 for a body, 400 for a parameter.
 */
const validation: FastifyPluginAsync = async (app) => {
  const bodies = buildAjv({ coerceTypes: false })
  const bodiesFirstProblem = buildAjv({ coerceTypes: false, allErrors: false })
  const parameters = buildAjv({ coerceTypes: 'array' })
  // Fastify's default formatter writes every error into the message, one line per bad item of a
  // huge array; the error handler reads the errors themselves and never this message.
  app.setSchemaErrorFormatter(
    (errors, dataVar) => new Error(`${dataVar} failed validation: ${errors.length} error(s)`),
  )
  // JSON is the wire format; a text/plain body is refused with 415 rather than parsed as a string.
  app.removeContentTypeParser('text/plain')
  // Fastify's own JSON parser has no nesting limit and refuses `__proto__` as malformed JSON.
  app.removeContentTypeParser('application/json')
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, jsonBodyParser)
  app.setValidatorCompiler(({ schema, httpPart }) => {
    if (httpPart === 'body' && (schema as Record<string, unknown>)[STREAMED_BODY] === true) return () => true
    return validatorOnFirstUse(() => {
      if (httpPart === 'body')
        return withChecks(everyProblemOfSmallBodies(bodiesFirstProblem.compile(schema), bodies, schema), [
          noFlawedString,
        ])
      const integers = integerMembers(schema as SchemaNode)
      const canonical = (data: unknown) => {
        const name = nonCanonicalInteger(data, integers)
        return name === undefined
          ? undefined
          : issue(`/${name}`, 'canonical', 'must be an integer in canonical decimal form (digits only)')
      }
      const text =
        httpPart === 'headers'
          ? noFlawedStringAmong(Object.keys((schema as SchemaNode).properties ?? {}))
          : noFlawedString
      return withChecks(parameters.compile(schema), [text, canonical])
    })
  })
}

export default fp(validation, { name: 'validation' })
