import type { FastifyPluginAsync } from 'fastify'
import fp from 'fastify-plugin'
import { BackgroundTasks } from '../lib/background-tasks.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** Work started by requests and not awaited by them; shutdown waits for it. */
    background: BackgroundTasks
  }
}

/**
 * Only the error's kind is logged: messages of mail and database errors can quote addresses and
 * values, and these tasks handle account data.
 */
function loggable(error: unknown) {
  const { name, code, command, responseCode } = (error ?? {}) as Error & {
    code?: string
    command?: string
    responseCode?: number
  }
  return { type: name, code, command, responseCode }
}

const background: FastifyPluginAsync = async (app) => {
  const tasks = new BackgroundTasks((name, error) =>
    app.log.error({ task: name, err: loggable(error) }, 'background task failed'),
  )
  app.decorate('background', tasks)
  // Registered after the database plugin, so it runs before the pool closes.
  app.addHook('onClose', async () => {
    await tasks.settled()
  })
}

export default fp(background, { name: 'background', dependencies: ['database'] })
