import type { FastifySchema, RouteOptions } from 'fastify'
import { OPTIONAL_BODY } from '../http/openapi-components.js'
import { isRateLimited } from './rate-limit.js'
import { REQUEST_ID_HEADER } from './request-context.js'

type HeaderSchema = { type: 'string' | 'integer'; description: string; example?: unknown }
type ResponseSchema = { headers?: Record<string, HeaderSchema>; properties?: Record<string, unknown> }

/** The headers the service sets on many answers, declared once here for the API description. */
const RESPONSE_HEADERS = {
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
  'X-Write-Position': {
    type: 'string',
    description:
      'With read replicas: the primary’s WAL position once this write had committed. Send it back as `X-Read-After` to read your own write from any instance',
    example: '0/1A2B3C4D',
  },
} satisfies Record<string, HeaderSchema>

const pick = (...names: (keyof typeof RESPONSE_HEADERS)[]) =>
  Object.fromEntries(names.map((name) => [name, RESPONSE_HEADERS[name]]))

/** A success answer that holds one record with a `version` carries its ETag (conditional-requests.ts). */
function holdsVersionedRecord(schema: ResponseSchema): boolean {
  const data = schema.properties?.data as ResponseSchema | undefined
  return data?.properties?.version !== undefined
}

const isWrite = (method: string) => !['GET', 'HEAD', 'OPTIONS'].includes(method)

/** The headers the service sets on an answer of this status to a `method` request to `url`. */
function headersOf(
  route: RouteOptions,
  url: string,
  status: number,
  schema: ResponseSchema,
): Record<string, HeaderSchema> {
  const method = [route.method].flat().join()
  // A sign-in route is counted by its failures, and says so only when it refuses one.
  const counted = isRateLimited(url) && (route.config?.rateLimit !== false || status === 429)
  return {
    ...pick('X-Request-Id'),
    ...(counted ? pick('X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset') : {}),
    ...(status === 429 ? pick('Retry-After') : {}),
    ...(status === 304 || (status < 300 && holdsVersionedRecord(schema)) ? pick('ETag') : {}),
    ...(status < 300 && isWrite(method) && url.startsWith('/api/') ? pick('X-Write-Position') : {}),
    // What a route declares itself (a download's Content-Range, a payment's Idempotent-Replayed).
    ...schema.headers,
  }
}

/** What a read of the API takes with read replicas: read nothing older than a write position. */
const readAfterParameter = {
  'x-read-after': {
    type: 'string',
    pattern: '^[0-9A-Fa-f]{1,8}/[0-9A-Fa-f]{1,8}$',
    description:
      'With read replicas: the `X-Write-Position` of a write you made; the answer reflects that write, whichever instance serves it',
  },
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
  const method = [route.method].flat().join()
  const response = Object.fromEntries(
    Object.entries(schema.response as Record<string, ResponseSchema>).map(([status, answer]) => [
      status,
      { ...answer, headers: headersOf(route, url, Number(status), answer) },
    ]),
  )
  const reads = method === 'GET' && url.startsWith('/api/') ? readAfterParameter : {}
  const headers = (schema.headers ?? { type: 'object', properties: {} }) as {
    properties?: Record<string, unknown>
  }
  return {
    ...schema,
    ...(route.config?.optionalBody ? { body: { ...(schema.body as object), [OPTIONAL_BODY]: true } } : {}),
    response,
    headers: { ...headers, properties: { ...requestIdParameter, ...reads, ...headers.properties } },
  }
}
