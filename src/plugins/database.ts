import type { FastifyPluginAsync } from 'fastify'
import fp from 'fastify-plugin'
import type { DatabaseHandle } from '../../db/connect.js'
import type { Db } from '../../db/database.js'

declare module 'fastify' {
  interface FastifyInstance {
    db: Db
    database: DatabaseHandle
  }
}

/** Exposes the database to every area; the app owns the handle and closes it last on shutdown. */
const database: FastifyPluginAsync<{ handle: DatabaseHandle }> = async (app, { handle }) => {
  app.decorate('db', handle.db)
  app.decorate('database', handle)
  app.addHook('onClose', async () => {
    await handle.close()
  })
}

export default fp(database, { name: 'database' })
