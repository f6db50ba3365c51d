import type { FastifyPluginAsync } from 'fastify'
import fp from 'fastify-plugin'
import {
  HashingBusy,
  type HashingPool,
  type HashingPoolSettings,
  hashingPool,
} from '../identity/hashing-pool.js'
import { hashOn } from '../identity/password-hashing.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** The threads this app's password hashes run on (identity/hashing-pool.ts). */
    passwordHashing: HashingPool
  }
}

/**
 * Password hashing on a bounded pool of its own, ended with the app. A check refused because the
 * pool is saturated answers 429 RATE_001 with Retry-After, and counts as a refused sign-in.
 */
const passwordHashing: FastifyPluginAsync<{ settings: HashingPoolSettings }> = async (app, { settings }) => {
  const pool = hashingPool(settings)
  const release = hashOn(pool)
  app.decorate('passwordHashing', pool)
  app.addHook('onError', async (_request, reply, error) => {
    if (!(error instanceof HashingBusy)) return
    app.serviceMetrics.rateLimited('sign-in')
    reply.header('retry-after', error.retryAfterSeconds)
  })
  app.addHook('onClose', async () => {
    release()
    await pool.close()
  })
}

export default fp(passwordHashing, { name: 'password-hashing', dependencies: ['metrics'] })
