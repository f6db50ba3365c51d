import { SerializerSelector } from '@fastify/fast-json-stringify-compiler'
import type { FastifySchemaCompiler, FastifyServerOptions } from 'fastify'
import { withNullableTypeLists } from '../lib/nullable-type-lists.js'

type Validator = ReturnType<FastifySchemaCompiler<unknown>>

// Compiling every route's validators and serializers at start-up was a large part of the time to
// ready (docs/performance-log.md); most routes of an instance are called rarely or never. Each is
// compiled on its first use instead (a few milliseconds once), which also keeps unused compiled
// code out of memory.

/** A validator compiled on its first call; Fastify reads `errors` after a failed one. */
export function validatorOnFirstUse(compile: () => Validator): Validator {
  let compiled: Validator | undefined
  const validate: Validator = (data) => {
    compiled ??= compile()
    const result = compiled(data)
    validate.errors = compiled.errors
    return result
  }
  return validate
}

type SerializerFactory = NonNullable<
  NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>['buildSerializer']
>

/**
 * Fastify's own response serializers (fast-json-stringify), each built on its first response, from
 * the route's schema with its nullable fields as type lists (see withNullableTypeLists).
 */
export const serializersOnFirstUse: SerializerFactory = (externalSchemas, options) => {
  const build = SerializerSelector()(externalSchemas, options)
  return (route) => {
    let serialize: ((data: unknown) => string) | undefined
    return (data) => {
      serialize ??= build({ ...route, schema: withNullableTypeLists(route.schema) })
      return serialize(data)
    }
  }
}
