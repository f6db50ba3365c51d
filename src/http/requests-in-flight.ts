import type { FastifyInstance, FastifyRequest } from 'fastify'

declare module 'fastify' {
  interface FastifyRequest {
    /** Counted by `requestsInFlight` and not yet let go. */
    inFlight: boolean
  }
}

/**
 * Counts the requests `app` is serving, from onRequest to the response or the client's abort, for
 * background work that gives way to them; a request is let go once, whichever comes first.
 *
 * A count and a flag on each request, not a Set of the requests: V8 links each outgrown table of a
 * Set or Map to the table that replaced it. Once a full GC has moved one table to the old
 * generation, that dead table keeps its successor, and so every later table and the requests in
 * them, alive through the scavenges until the next full GC. Under load a Set of requests had nearly
 * every request promoted and full GCs several times a second (docs/performance-log.md).
 */
export function requestsInFlight(app: FastifyInstance): () => number {
  let count = 0
  const release = (request: FastifyRequest, next: () => void) => {
    if (request.inFlight) {
      request.inFlight = false
      count -= 1
    }
    next()
  }
  app.decorateRequest('inFlight', false)
  app.addHook('onRequest', (request, _reply, next) => {
    request.inFlight = true
    count += 1
    next()
  })
  app.addHook('onResponse', (request, _reply, next) => release(request, next))
  app.addHook('onRequestAbort', (request, next) => release(request, next))
  return () => count
}
