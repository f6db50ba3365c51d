import { Ajv, type Options } from 'ajv'
import addFormats from 'ajv-formats'
import type { FastifyPluginAsync } from 'fastify'
import fp from 'fastify-plugin'
import { validatorOnFirstUse } from '../lib/lazy-compile.js'

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

/**
 * Request validation: query strings, path parameters and headers are text and are coerced to the
 * schema's types; JSON bodies are checked exactly as sent (a string "42" is not an integer).
 */
const validation: FastifyPluginAsync = async (app) => {
  const bodies = buildAjv({ coerceTypes: false })
  const parameters = buildAjv({ coerceTypes: 'array' })
  // JSON is the wire format; a text/plain body is refused with 415 rather than parsed as a string.
  app.removeContentTypeParser('text/plain')
  app.setValidatorCompiler(({ schema, httpPart }) => {
    if (httpPart === 'body' && (schema as Record<string, unknown>)[STREAMED_BODY] === true) return () => true
    return validatorOnFirstUse(() => (httpPart === 'body' ? bodies : parameters).compile(schema))
  })
}

export default fp(validation, { name: 'validation' })
