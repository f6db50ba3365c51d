import { randomUUID } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import type { FastifyPluginAsync, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { sentMethod } from '../http/head-requests.js'

export const REQUEST_ID_HEADER = 'x-request-id'
const SAFE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/

/** Keeps a caller's request id when it is safe to echo and log; otherwise makes one. */
export function requestIdFor(request: IncomingMessage): string {
  const incoming = request.headers[REQUEST_ID_HEADER]
  return typeof incoming === 'string' && SAFE_REQUEST_ID.test(incoming) ? incoming : randomUUID()
}

/** What the access log shows of a request that matched no route, in place of its path. */
const UNMATCHED_ROUTE = '(unmatched)'

/**
 * The request as the access log shows it: the method and the route template. A path that matched
 * no route is not shown at all, not even in part: a client may have put a name or a birth date
 * anywhere in it, and without a template nothing tells values from structure.
 */
function loggedRequest(request: FastifyRequest) {
  return { method: sentMethod(request.raw), url: request.routeOptions.url ?? UNMATCHED_ROUTE }
}

const requestContext: FastifyPluginAsync = async (app) => {
  app.addHook('onRequest', (request, reply, done) => {
    reply.header(REQUEST_ID_HEADER, request.id)
    done()
  })
  // The access log: method, route template (never the path or query string: they can hold names),
  // status, duration.
  // Its fields are built here and hold no credential, so it skips the redaction of credential paths
  // that every other line pays for (a scan of each field on every request).
  const accessLog = app.log.child({}, { redact: [], serializers: { req: loggedRequest } })
  app.addHook('onResponse', (request, reply, done) => {
    accessLog.info(
      {
        reqId: request.id,
        req: request,
        res: { statusCode: reply.statusCode },
        responseTime: Math.round(reply.elapsedTime * 10) / 10,
      },
      'request completed',
    )
    done()
  })
}

export default fp(requestContext, { name: 'request-context' })
