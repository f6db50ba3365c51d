import type { IncomingMessage } from 'node:http'

const SENT_AS_HEAD = Symbol('sent as HEAD')

type Marked = IncomingMessage & { [SENT_AS_HEAD]?: true }

/**
 * Fastify's `rewriteUrl`, run before routing: a HEAD request is routed to the GET route of its path
 * (RFC 9110 §9.3.2: the same answer without its content), so it passes the same access rule, rate
 * limit, audit, conditional check and metrics as GET. Node's response has already been made for a
 * HEAD request and writes no body, whatever the route sends; the headers, Content-Length included,
 * are GET's.
 *
 * Fastify's own way (`exposeHeadRoutes`) registers a second route for every GET, which made getting
 * the app ready measurably slower (docs/performance-log.md): start-up time is held to a budget
 * (BENCHMARKS.md).
 */
export function routeHeadAsGet(request: IncomingMessage): string {
  if (request.method === 'HEAD') {
    request.method = 'GET'
    ;(request as Marked)[SENT_AS_HEAD] = true
  }
  return request.url ?? '/'
}

/** The method the client sent: HEAD for a request routed as GET. */
export const sentMethod = (request: IncomingMessage): string =>
  (request as Marked)[SENT_AS_HEAD] ? 'HEAD' : (request.method ?? '')
