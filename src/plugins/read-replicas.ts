import type { FastifyPluginAsync, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { Db } from '../../db/database.js'
import type { ReadReplicas } from '../../db/replicas.js'
import { formatLsn, parseLsn } from '../../db/wal-positions.js'
import { METRIC } from '../lib/service-metrics.js'
import { TtlCache } from '../lib/ttl-cache.js'

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * Where a read that may be slightly stale (a list, a search, a chart) goes for this request's
     * caller: a read replica that has replayed the caller's own writes, else the primary.
     */
    readDb(request: FastifyRequest): Db
    readReplicas: ReadReplicas | undefined
  }
}

/** Sent on every successful write: the primary's WAL position once it had committed. */
const WRITE_POSITION_HEADER = 'x-write-position'
/** Sent back by a caller (to any instance): read nothing older than this position. */
const READ_AFTER_HEADER = 'x-read-after'

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS'])
// A caller's last write position is kept this long (past it, any replica in rotation has
// replayed it: one that had not would be past the lag limit and out of rotation).
const REMEMBER_MS = 60_000
const REMEMBERED_CALLERS_MAX = 50_000

/** The caller a remembered position belongs to: the token's session, or its subject. */
const callerOf = (request: FastifyRequest) =>
  request.principal ? `${request.principal.subject} ${request.principal.sessionId ?? ''}` : undefined

/**
 * Read replicas (DATABASE_READ_URLS). Reads of lists, searches and charts go to a replica that has
 * replayed the caller's writes, so a caller always reads what it wrote without sticky sessions:
 * each successful write answers with `X-Write-Position`, remembered here for the caller's session
 * and honoured by every instance when the caller sends it back as `X-Read-After`. Everything else
 * (writes, reads inside them, single records behind a conditional request) reads the primary.
 */
const readReplicas: FastifyPluginAsync<{ replicas: ReadReplicas | undefined }> = async (
  app,
  { replicas },
) => {
  app.decorate('readReplicas', replicas)
  if (!replicas) {
    app.decorate('readDb', () => app.db)
    return
  }
  const positions = new TtlCache<string, bigint>(REMEMBER_MS, REMEMBERED_CALLERS_MAX)

  app.decorate('readDb', (request: FastifyRequest) => {
    const caller = callerOf(request)
    const sent = request.headers[READ_AFTER_HEADER]
    const asked = typeof sent === 'string' ? parseLsn(sent) : undefined
    const remembered = caller === undefined ? undefined : positions.get(caller)
    const after = asked === undefined || (remembered !== undefined && remembered > asked) ? remembered : asked
    return replicas.readerFor(after)
  })

  app.addHook('onSend', async (request, reply, payload) => {
    if (SAFE_METHODS.has(request.method) || reply.statusCode >= 400) return payload
    try {
      const position = await replicas.writePosition()
      reply.header(WRITE_POSITION_HEADER, formatLsn(position))
      const caller = callerOf(request)
      if (caller !== undefined) positions.set(caller, position)
    } catch {
      // The write is done; without its position the caller's next reads simply go to the primary.
      const caller = callerOf(request)
      if (caller !== undefined) positions.set(caller, 2n ** 64n - 1n)
    }
    return payload
  })

  const { client } = app.metrics
  new client.Gauge({
    name: METRIC.dbReplicaLag,
    help: 'How far each read replica is behind the primary, in seconds (as of its last check)',
    labelNames: ['replica'],
    collect() {
      this.reset()
      for (const status of replicas.statuses()) this.set({ replica: status.name }, status.lagSeconds)
    },
  })
  new client.Gauge({
    name: METRIC.dbReplicaInRotation,
    help: 'Whether each read replica takes reads (1) or is out of rotation, lagging or down (0)',
    labelNames: ['replica'],
    collect() {
      this.reset()
      for (const status of replicas.statuses())
        this.set({ replica: status.name }, status.state === 'UP' ? 1 : 0)
    },
  })
  app.addHook('onClose', async () => replicas.close())
}

export default fp(readReplicas, { name: 'read-replicas', dependencies: ['database', 'metrics'] })
