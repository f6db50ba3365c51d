import type { FastifySchema, RouteOptions } from 'fastify'
import { OPTIONAL_BODY } from '../http/openapi-components.js'
import { isRateLimited } from './rate-limit.js'
import { REQUEST_ID_HEADER } from './request-context.js'

type HeaderSchema = { type: 'string' | 'integer'; description: string; example?: unknown }
type ResponseSchema = { headers?: Record<string, HeaderSchema>; properties?: Record<string, unknown> }

/** The headers the service sets on many answers, declared once here for the API description. */
export const RESPONSE_HEADERS = {
  'X-Request-Id': {
    type: 'string',
    description:
      'The id of this request: the caller’s `X-Request-Id` when it is safe to echo, otherwise a new one. Quote it when reporting a problem.',
  },
  'X-RateLimit-Limit': {
    type: 'integer',
    description: 'Requests allowed to this caller in the current window',
  },
  'X-RateLimit-Remaining': {
    type: 'integer',
    description: 'Requests left to this caller in the current window',
  },
  'X-RateLimit-Reset': {
    type: 'integer',
    description: 'Unix time, in seconds, when the current window ends',
  },
  'Retry-After': { type: 'integer', description: 'Seconds to wait before trying again' },
  ETag: {
    type: 'string',
    description:
      'The record’s version as a weak ETag, `W/"<version>"`: send it back in `If-Match` or `If-None-Match`',
    example: 'W/"3"',
  },
} satisfies Record<string, HeaderSchema>

const pick = (...names: (keyof typeof RESPONSE_HEADERS)[]) =>
  Object.fromEntries(names.map((name) => [name, RESPONSE_HEADERS[name]]))

/** A success answer that holds one record with a `version` carries its ETag (conditional-requests.ts). */
function holdsVersionedRecord(schema: ResponseSchema): boolean {
  const data = schema.properties?.data as ResponseSchema | undefined
  return data?.properties?.version !== undefined
}

/** The headers the service sets on an answer of this status to a request to `url`. */
function headersOf(url: string, status: number, schema: ResponseSchema): Record<string, HeaderSchema> {
  return {
    ...pick('X-Request-Id'),
    ...(isRateLimited(url) ? pick('X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset') : {}),
    ...(status === 429 ? pick('Retry-After') : {}),
    ...(status === 304 || (status < 300 && holdsVersionedRecord(schema)) ? pick('ETag') : {}),
    // What a route declares itself (a download's Content-Range, a payment's Idempotent-Replayed).
    ...schema.headers,
  }
}

/** The request header every operation reads when the caller sends it. */
const requestIdParameter = {
  [REQUEST_ID_HEADER]: {
    type: 'string',
    description:
      'Your own id for this request (1–128 letters, digits, `.`, `_`, `:`, `-`), echoed in the answer and written to the service’s log; another value is replaced by a new id',
  },
}

/**
 * The route's schema as the API description shows it: every response declares the headers the
 * service sets on it, every operation the request headers it reads, and a body the route lets
 * callers leave out is not required. Only the description changes; validation and serialization
 * use the route's own schema.
 */
export function documentRoute(schema: FastifySchema, url: string, route: RouteOptions): FastifySchema {
  if (!schema?.response) return schema
  const response = Object.fromEntries(
    Object.entries(schema.response as Record<string, ResponseSchema>).map(([status, answer]) => [
      status,
      { ...answer, headers: headersOf(url, Number(status), answer) },
    ]),
  )
  const headers = (schema.headers ?? { type: 'object', properties: {} }) as {
    properties?: Record<string, unknown>
  }
  return {
    ...schema,
    ...(route.config?.optionalBody ? { body: { ...(schema.body as object), [OPTIONAL_BODY]: true } } : {}),
    response,
    headers: { ...headers, properties: { ...requestIdParameter, ...headers.properties } },
  }
}
