import type { Static, TSchema } from '@sinclair/typebox'
import type { FastifyRequest } from 'fastify'

/**
 * A merged record checked against the full body schema of its route's replacement, with the same
 * validator and the same 422 answer as a body sent whole.
 */
export function validMergedBody<T extends TSchema>(
  request: FastifyRequest,
  schema: T,
  merged: unknown,
): Static<T> {
  const validate = request.compileValidationSchema(schema as Record<string, unknown>, 'body')
  if (validate(merged)) return merged as Static<T>
  throw Object.assign(new Error('The patched record is not valid'), {
    validation: validate.errors ?? [],
    validationContext: 'body',
  })
}
