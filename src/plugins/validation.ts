import { Ajv, type ErrorObject, type Options } from 'ajv'
import addFormats from 'ajv-formats'
import type { FastifyPluginAsync, FastifySchemaCompiler } from 'fastify'
import fp from 'fastify-plugin'
import { validatorOnFirstUse } from '../lib/lazy-compile.js'

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
    allErrors: false,
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
// a driver error. It never belongs in clinical or administrative text, so any string that holds one,
// at any depth, is refused by validation like any other malformed value.
const NUL = '\u0000'

/** The JSON Pointer of the first string holding a NUL, or undefined. */
function nulPath(value: unknown, path = ''): string | undefined {
  if (typeof value === 'string') return value.includes(NUL) ? path : undefined
  if (typeof value !== 'object' || value === null) return undefined
  if (Array.isArray(value)) {
    for (let index = 0; index < value.length; index++) {
      const found = nulPath(value[index], `${path}/${index}`)
      if (found !== undefined) return found
    }
    return undefined
  }
  for (const [key, member] of Object.entries(value)) {
    // The member's name counts as input too.
    if (key.includes(NUL)) return `${path}/${key.replaceAll(NUL, '')}`
    const found = nulPath(member, `${path}/${key}`)
    if (found !== undefined) return found
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

/** Runs `checks` on the raw input before the schema's own validator; the first finding fails it. */
function withChecks(compiled: Validator, checks: ((data: unknown) => ErrorObject | undefined)[]): Validator {
  const validate: Validator = (data) => {
    for (const check of checks) {
      const found = check(data)
      if (found) {
        validate.errors = [found]
        return false
      }
    }
    const result = compiled(data)
    validate.errors = compiled.errors
    return result
  }
  return validate
}

const noNul = (data: unknown) => {
  const path = nulPath(data)
  return path === undefined ? undefined : issue(path, 'nul', 'must not contain a NUL character (U+0000)')
}

/**
 * Request validation: query strings, path parameters and headers are text and are coerced to the
 * schema's types (integers only from canonical decimal text); JSON bodies are checked exactly as
 * sent (a string "42" is not an integer). No string anywhere may hold a NUL character. Failures
 * become VAL_001/VAL_002 in the error handler: 422 for a body, 400 for a parameter.
 */
const validation: FastifyPluginAsync = async (app) => {
  const bodies = buildAjv({ coerceTypes: false })
  const parameters = buildAjv({ coerceTypes: 'array' })
  // JSON is the wire format; a text/plain body is refused with 415 rather than parsed as a string.
  app.removeContentTypeParser('text/plain')
  app.setValidatorCompiler(({ schema, httpPart }) => {
    if (httpPart === 'body' && (schema as Record<string, unknown>)[STREAMED_BODY] === true) return () => true
    return validatorOnFirstUse(() => {
      if (httpPart === 'body') return withChecks(bodies.compile(schema), [noNul])
      const integers = integerMembers(schema as SchemaNode)
      const canonical = (data: unknown) => {
        const name = nonCanonicalInteger(data, integers)
        return name === undefined
          ? undefined
          : issue(`/${name}`, 'type', 'must be an integer in canonical decimal form (digits only)')
      }
      return withChecks(parameters.compile(schema), [noNul, canonical])
    })
  })
}

export default fp(validation, { name: 'validation' })
