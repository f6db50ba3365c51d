import { statfs } from 'node:fs/promises'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import fp from 'fastify-plugin'
import { sql } from 'kysely'
import { Health, Probe } from '../../schemas/health.js'

type ComponentStatus = Health['components']['db']

const DB_CHECK_TIMEOUT_MS = 2000
// Below this much free space the service cannot be trusted to persist anything (PGlite, uploads).
const MIN_FREE_BYTES = 100 * 1024 * 1024

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('timed out')), ms)
    }),
  ]).finally(() => clearTimeout(timer))
}

/** Spring Boot Actuator-style probes: health (db, diskSpace, ping), readiness and liveness. */
const health: FastifyPluginAsyncTypebox<{ dataDir: string }> = async (app, { dataDir }) => {
  let shuttingDown = false
  app.addHook('preClose', async () => {
    shuttingDown = true
  })

  async function database(): Promise<ComponentStatus> {
    try {
      await withTimeout(sql`select 1`.execute(app.db), DB_CHECK_TIMEOUT_MS)
      return { status: 'UP', details: { database: app.database.kind } }
    } catch {
      return { status: 'DOWN', details: { database: app.database.kind } }
    }
  }

  async function diskSpace(): Promise<ComponentStatus> {
    try {
      const stats = await statfs(dataDir).catch(() => statfs('.'))
      const free = stats.bavail * stats.bsize
      return { status: free >= MIN_FREE_BYTES ? 'UP' : 'DOWN', details: { free, threshold: MIN_FREE_BYTES } }
    } catch {
      return { status: 'DOWN' }
    }
  }

  /** Each read replica as of its last check; the primary serves reads while none can. */
  function replicas(): ComponentStatus | undefined {
    const statuses = app.readReplicas?.statuses()
    if (!statuses) return undefined
    return {
      status: statuses.every((replica) => replica.state === 'UP') ? 'UP' : 'DOWN',
      details: Object.fromEntries(
        statuses.map(({ name, state, lagSeconds }) => [name, `${state}, ${lagSeconds.toFixed(1)} s behind`]),
      ),
    }
  }

  async function check(): Promise<Health> {
    const [db, disk] = await Promise.all([database(), diskSpace()])
    const up = db.status === 'UP' && disk.status === 'UP'
    const replicaStatus = replicas()
    return {
      status: up ? 'UP' : 'DOWN',
      components: {
        db,
        diskSpace: disk,
        ping: { status: 'UP' },
        ...(replicaStatus ? { replicas: replicaStatus } : {}),
      },
    }
  }

  const tags = ['Operations']
  app.get(
    '/actuator/health',
    {
      schema: {
        tags,
        operationId: 'health',
        summary: 'Overall health with the db, diskSpace and ping components',
        security: [],
        response: {
          200: { ...Health, description: 'UP: every component answers' },
          503: {
            ...Health,
            description: 'DOWN: at least one component does not answer; `components` says which',
          },
        },
      },
    },
    async (_request, reply) => {
      const result = await check()
      return reply.code(result.status === 'UP' ? 200 : 503).send(result)
    },
  )

  app.get(
    '/actuator/health/readiness',
    {
      schema: {
        tags,
        operationId: 'readiness',
        summary: 'Ready for traffic: the database answers and the service is not shutting down',
        security: [],
        response: {
          200: { ...Probe, description: 'UP: ready for traffic' },
          503: {
            ...Probe,
            description: 'DOWN: the database does not answer or the service is shutting down',
          },
        },
      },
    },
    async (_request, reply) => {
      const ready = !shuttingDown && (await database()).status === 'UP'
      return reply.code(ready ? 200 : 503).send({ status: ready ? 'UP' : 'DOWN' })
    },
  )

  app.get(
    '/actuator/health/liveness',
    {
      schema: {
        tags,
        operationId: 'liveness',
        summary: 'The process is running',
        security: [],
        response: { 200: Probe },
      },
    },
    async () => ({ status: 'UP' as const }),
  )
}

export default fp(health, { name: 'health', dependencies: ['database'] })
