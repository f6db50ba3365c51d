import type { IncomingMessage, ServerResponse } from 'node:http'
import cors from '@fastify/cors'
import type { FastifyPluginAsync } from 'fastify'
import fp from 'fastify-plugin'
import helmet from 'helmet'

/**
 * The headers helmet sets, read once: they depend on the options only, and setting them from a
 * plain object costs a fraction of running helmet's middleware on every response.
 */
function helmetHeaders(): Record<string, string> {
  const headers: Record<string, string> = {}
  const recorder = {
    setHeader: (name: string, value: string) => {
      headers[name.toLowerCase()] = value
    },
    removeHeader: () => {},
  }
  // helmet works synchronously and throws rather than calls back on error.
  helmet({ contentSecurityPolicy: { useDefaults: false, directives: API_CSP } })(
    {} as IncomingMessage,
    recorder as unknown as ServerResponse,
    () => {},
  )
  return headers
}

/** Response headers a browser may read from a cross-origin call (request id, limits, downloads). */
const EXPOSED_HEADERS = [
  'X-Request-Id',
  'X-RateLimit-Limit',
  'X-RateLimit-Remaining',
  'X-RateLimit-Reset',
  'Retry-After',
  'Content-Disposition',
]

// The API serves JSON, never pages: a policy that loads nothing and cannot be framed. The explorer
// sets its own, looser policy on its files (openapi.ts).
const API_CSP = {
  defaultSrc: ["'none'"],
  frameAncestors: ["'none'"],
  baseUri: ["'none'"],
  formAction: ["'none'"],
}

/**
 * Security headers on every response (helmet), `Cache-Control: no-store` on the API (answers carry
 * PHI and must not stay in shared or browser caches), and CORS for the configured origins only:
 * with none configured no CORS header is ever sent, so browsers on other origins are refused.
 */
const securityHeaders: FastifyPluginAsync<{ corsOrigins: readonly string[] }> = async (
  app,
  { corsOrigins },
) => {
  const headers = helmetHeaders()
  const apiHeaders = { ...headers, 'cache-control': 'no-store' }
  // Set on the reply, so a route's own (the explorer's CSP) replaces them.
  app.addHook('onRequest', (request, reply, done) => {
    reply.headers(request.url.startsWith('/api/') ? apiHeaders : headers)
    done()
  })
  if (corsOrigins.length > 0) {
    await app.register(cors, {
      origin: [...corsOrigins],
      methods: ['GET', 'POST', 'PUT', 'DELETE'],
      allowedHeaders: ['Authorization', 'Content-Type', 'X-Request-Id'],
      exposedHeaders: EXPOSED_HEADERS,
      // Bearer tokens, not cookies: browsers need not send credentials.
      credentials: false,
      maxAge: 600,
    })
  }
}

export default fp(securityHeaders, { name: 'security-headers' })
