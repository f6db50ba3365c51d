import type { IncomingMessage, ServerResponse } from 'node:http'
import cors from '@fastify/cors'
import type { FastifyPluginAsync } from 'fastify'
import fp from 'fastify-plugin'
import helmet from 'helmet'
import { EXPLORER_PREFIX } from './openapi.js'

/**
 * The headers helmet sets for a page, read once: they depend on the options only, and setting them
 * from a plain object costs a fraction of running helmet's middleware on every response.
 */
function pageHeaders(): Record<string, string> {
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

/**
 * The headers of a response that is data, not a page: the set the OWASP REST Security Cheat Sheet
 * asks of every API response, plus the referrer and cross-origin resource policies. Helmet's others
 * (opener policy, origin-agent cluster, DNS prefetch, download options, cross-domain policies, the
 * legacy XSS filter) act on documents only, and each costs every response its bytes and handling.
 */
function dataHeaders(page: Record<string, string>): Record<string, string> {
  const kept = [
    'content-security-policy',
    'strict-transport-security',
    'x-content-type-options',
    'referrer-policy',
    'cross-origin-resource-policy',
  ]
  // frame-ancestors 'none' says the same; DENY is its equivalent for browsers without CSP 2.
  return {
    ...Object.fromEntries(kept.map((name) => [name, page[name] as string])),
    'x-frame-options': 'DENY',
  }
}

// Answers that carry patient data.
const PHI = /^\/(api|fhir)\//

/** Response headers a browser may read from a cross-origin call (request id, limits, downloads). */
const EXPOSED_HEADERS = [
  'X-Request-Id',
  'X-RateLimit-Limit',
  'X-RateLimit-Remaining',
  'X-RateLimit-Reset',
  'Retry-After',
  'Content-Disposition',
  // Versions and conditional writes (ETag for If-Match), where a created record is, and FHIR's notices.
  'ETag',
  'Location',
  'Warning',
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
 * Security headers on every response (data headers on data, helmet's full set on the explorer's
 * pages), `Cache-Control: no-store` on the API and FHIR answers (they carry PHI and must not stay
 * in shared or browser caches), and CORS for the configured origins only: with none configured no
 * CORS header is ever sent, so browsers on other origins are refused.
 */
const securityHeaders: FastifyPluginAsync<{ corsOrigins: readonly string[] }> = async (
  app,
  { corsOrigins },
) => {
  const page = pageHeaders()
  const data = dataHeaders(page)
  const phi = { ...data, 'cache-control': 'no-store' }
  // Set on the reply, so a route's own (the explorer's CSP, a download's cache policy) replaces them.
  app.addHook('onRequest', (request, reply, done) => {
    const { url } = request
    reply.headers(PHI.test(url) ? phi : url.startsWith(EXPLORER_PREFIX) ? page : data)
    done()
  })
  if (corsOrigins.length > 0) {
    await app.register(cors, {
      origin: [...corsOrigins],
      methods: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'],
      allowedHeaders: [
        'Authorization',
        'Content-Type',
        'X-Request-Id',
        'If-Match',
        'If-None-Match',
        'Idempotency-Key',
        'Prefer',
      ],
      exposedHeaders: EXPOSED_HEADERS,
      // Bearer tokens, not cookies: browsers need not send credentials.
      credentials: false,
      maxAge: 600,
    })
  }
}

export default fp(securityHeaders, { name: 'security-headers' })
