import type { FastifyPluginAsync, FastifyReply, FastifyRequest, RouteOptions } from 'fastify'
import fp from 'fastify-plugin'
import { AppError } from '../errors.js'
import { jsonBodyParser } from '../http/json-body.js'
import { errorResponse, nameResponse } from '../http/responses.js'
import type { ExpectedVersion } from '../lib/versions.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** The version `If-Match` names on a conditional write; undefined: unconditional (or `*`). */
    expectedVersion: ExpectedVersion
  }
}

export const MERGE_PATCH = 'application/merge-patch+json'

/** The description of a PATCH operation: how to send a merge patch, then what is particular to it. */
export const mergePatchDescription = (particulars: string) =>
  `Send \`Content-Type: application/merge-patch+json\` (RFC 7396; \`application/json\` is read the same). Only the members sent change; ${particulars}`

/** The weak ETag of a record version, as every single-record response carries it. */
const etagOf = (version: number) => `W/"${version}"`

/** `If-None-Match` names the version (weak comparison, RFC 9110 §13.1.2), or is `*`. */
function namesVersion(header: string | undefined, version: number): boolean {
  if (header === undefined) return false
  return header
    .split(',')
    .map((tag) => tag.trim().replace(/^W\//, ''))
    .some((tag) => tag === '*' || tag === `"${version}"`)
}

const versionOf = (payload: unknown): number | undefined => {
  const data = (payload as { success?: boolean; data?: { version?: unknown } } | null)?.data
  return (payload as { success?: boolean })?.success === true && typeof data?.version === 'number'
    ? data.version
    : undefined
}

const headerNames = (route: RouteOptions) =>
  Object.keys((route.schema?.headers as { properties?: object } | undefined)?.properties ?? {})

const NOT_MODIFIED = {
  description: 'Not Modified: the record is still at a version `If-None-Match` names; no body',
  type: 'null',
}
nameResponse(304, NOT_MODIFIED.description, 'NotModified')

/**
 * Conditional requests (RFC 9110) for versioned records. Every successful answer holding one record
 * with a `version` carries its ETag; a GET whose `If-None-Match` names it is 304. A route that
 * declares the `If-Match` header (IfMatchHeaders) gets its version parsed into
 * `request.expectedVersion`, which its service checks while holding the row; with
 * `requireIfMatch` such a route refuses a write without it (428).
 */
const conditionalRequests: FastifyPluginAsync<{ requireIfMatch: boolean }> = async (
  app,
  { requireIfMatch },
) => {
  app.decorateRequest('expectedVersion', undefined)
  // A merge patch is JSON; it is parsed (and limited) like any JSON body.
  app.addContentTypeParser(MERGE_PATCH, { parseAs: 'buffer' }, jsonBodyParser)

  async function readIfMatch(request: FastifyRequest) {
    const header = request.headers['if-match']
    if (header === undefined && requireIfMatch) {
      throw new AppError(
        'RES_003',
        'This service requires If-Match on writes: send the ETag of the record as you read it',
        { status: 428, message: 'Precondition required' },
      )
    }
    request.expectedVersion =
      header === undefined || header === '*'
        ? undefined
        : Number(header.replace(/^W\//, '').replaceAll('"', ''))
  }

  app.addHook('onRoute', (route) => {
    if (!route.url.startsWith('/api/')) return
    const headers = headerNames(route)
    const response = (route.schema?.response ?? {}) as Record<number, unknown>
    if (headers.includes('if-none-match')) {
      route.schema = { ...route.schema, response: { ...response, 304: NOT_MODIFIED } }
    }
    if (headers.includes('if-match')) {
      route.schema = {
        ...route.schema,
        response: { ...response, 412: errorResponse(412), 428: errorResponse(428) },
      }
      const preHandlers = route.preHandler === undefined ? [] : [route.preHandler].flat()
      route.preHandler = [readIfMatch, ...preHandlers]
    }
  })

  // Both hooks call back rather than return a promise: they run on every response, and neither waits.
  app.addHook('preSerialization', (request: FastifyRequest, reply: FastifyReply, payload: unknown, done) => {
    const version = reply.statusCode < 300 ? versionOf(payload) : undefined
    if (version !== undefined) {
      reply.header('etag', etagOf(version))
      if (request.method === 'GET' && namesVersion(request.headers['if-none-match'], version)) {
        reply.code(304)
      }
    }
    done(null, payload)
  })

  // A 304 carries the ETag and no body (RFC 9110 §15.4.5).
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (reply.statusCode !== 304) return done(null, payload)
    reply.removeHeader('content-type')
    reply.removeHeader('content-length')
    done(null, null)
  })
}

export default fp(conditionalRequests, { name: 'conditional-requests', dependencies: ['route-conventions'] })
