import { createHash } from 'node:crypto'
import { promisify } from 'node:util'
import { brotliCompress, constants, gzip } from 'node:zlib'
import { Negotiator } from '@fastify/accept-negotiator'
import compress, { type FastifyCompressOptions } from '@fastify/compress'
import type { FastifyPluginAsync, FastifyReply, FastifyRequest, RouteOptions } from 'fastify'
import fp from 'fastify-plugin'

declare module 'fastify' {
  interface FastifyInstance {
    /** The routes whose answers are compressed (`GET /api/patients`, …), in registration order. */
    compressedRoutes: string[]
  }
}

/**
 * Pages (and FHIR searchsets, which mark their routes with it) compressed with the encoding the
 * client prefers. Below 1 KB (the plugin's default threshold) an answer fits in one packet either
 * way, so compressing it costs CPU and saves no round trip: an empty page or a page of one patient
 * stays as it is, while a page of 20 patients shrinks several times (docs/performance-log.md).
 * Brotli at quality 4 (the plugin's default): per request, the higher levels cost far more time
 * than the bytes they save.
 */
export const PAGE_COMPRESSION = {
  threshold: 1024,
  encodings: ['br', 'gzip'],
} satisfies FastifyCompressOptions

/**
 * A list operation: a GET under /api whose 200 answer is the envelope around a Page (`content` and
 * `pageable`, schemas/common.ts). Single records (the hot path), downloads (bytes, Range and 206),
 * the change feed's long poll, FHIR reads and bulk files, and every write are left alone.
 */
function isPageList(route: RouteOptions): boolean {
  if ([route.method].flat().join() !== 'GET' || !route.url.startsWith('/api/')) return false
  const ok = (
    route.schema?.response as Record<string, { properties?: Record<string, unknown> }> | undefined
  )?.['200']
  const page = (ok?.properties?.data as { properties?: Record<string, unknown> } | undefined)?.properties
  return page?.content !== undefined && page.pageable !== undefined
}

/**
 * Response compression (@fastify/compress) on list pages only, never on request bodies. Every other
 * route is marked `compress: false` before the plugin sees it: a route left unmarked would still get
 * an onRequest hook from the plugin (to offer `reply.compress`) that runs on every request, the
 * single-record reads included, for nothing.
 */
const compression: FastifyPluginAsync = async (app) => {
  const compressed: string[] = []
  app.decorate('compressedRoutes', compressed)
  // Before the plugin's own onRoute hook, registered next, which reads `route.compress`.
  app.addHook('onRoute', (route) => {
    route.compress ??= isPageList(route) ? PAGE_COMPRESSION : false
    if (route.compress) compressed.push(`${route.method} ${route.url}`)
  })
  // `global: false` also leaves request decompression off: a compressed body could inflate far past
  // the body limit, which counts the bytes received.
  await app.register(compress, { ...PAGE_COMPRESSION, global: false })
}

export default fp(compression, { name: 'compression' })

type Coding = 'br' | 'gzip' | 'identity'

/** The content coding to answer with (RFC 9110 §12.5.3); identity when nothing else is acceptable. */
const codings = new Negotiator<Coding>({ supportedValues: ['br', 'gzip', 'identity'] })
const negotiateEncoding = (header: string | undefined): Coding =>
  (header && codings.negotiate(header)) || 'identity'

/** `If-None-Match` is `*` or names the tag (weak comparison, RFC 9110 §13.1.2). */
function namesTag(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false
  return (header.match(/\*|(?:W\/)?"[^"]*"/g) ?? []).some(
    (tag) => tag === '*' || tag.replace(/^W\//, '') === etag,
  )
}

interface Representation {
  body: Buffer
  etag: string
}

// Brotli 11 would save a little more of the document at many times the time, paid by its first
// reader (docs/performance-log.md).
const BROTLI_DOCUMENT = {
  params: { [constants.BROTLI_PARAM_QUALITY]: 9, [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT },
}

async function representations(value: unknown): Promise<Record<Coding, Representation>> {
  const json = Buffer.from(JSON.stringify(value))
  const hash = createHash('sha256').update(json).digest('base64url')
  const [br, gzipped] = await Promise.all([
    promisify(brotliCompress)(json, BROTLI_DOCUMENT),
    promisify(gzip)(json, { level: 9 }),
  ])
  // One strong tag per coding (RFC 9110 §8.8.3): the gzip and brotli bodies are other bytes than
  // the JSON, and a cache revalidating one of them must not be told it holds another.
  return {
    identity: { body: json, etag: `"${hash}"` },
    gzip: { body: gzipped, etag: `"${hash}-gzip"` },
    br: { body: br, etag: `"${hash}-br"` },
  }
}

/**
 * A JSON document that never changes once the app is ready (the OpenAPI document), served from
 * memory: serialized, hashed and compressed once, on the first request (not at start-up, which it
 * would slow; the compression runs off the event loop), then answered with a strong ETag per coding,
 * 304 on a matching `If-None-Match`, and `Cache-Control: no-cache` so clients revalidate rather than
 * guess. @fastify/compress would compress the whole document again on every request.
 */
export function precompressedJson(source: () => unknown) {
  let ready: Promise<Record<Coding, Representation>> | undefined
  const load = () => {
    ready ??= representations(source()).catch((error: unknown) => {
      ready = undefined
      throw error
    })
    return ready
  }
  return async function send(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    const coding = negotiateEncoding(request.headers['accept-encoding'])
    const { body, etag } = (await load())[coding]
    const vary = reply.getHeader('vary')
    reply
      .header('vary', vary ? `${vary}, Accept-Encoding` : 'Accept-Encoding')
      .header('cache-control', 'no-cache')
      .header('etag', etag)
    if (namesTag(request.headers['if-none-match'], etag)) return reply.code(304).send()
    if (coding !== 'identity') reply.header('content-encoding', coding)
    return reply.type('application/json; charset=utf-8').send(body)
  }
}
