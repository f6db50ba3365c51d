import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { CHANGE_FEED_DESCRIPTION, ChangeFeedEnvelope, ChangeFeedQuery } from '../../../schemas/change-feed.js'
import { ok } from '../../http/envelope.js'
import { principalOf } from '../../http/request-principal.js'
import { FeedWaiter } from './feed-waiter.js'
import { feedMark } from './queries.js'
import { readChangeFeed } from './service.js'

/** Aborts when the client goes away before its answer is sent, so a long poll stops waiting for nobody. */
function clientGone(request: FastifyRequest, reply: FastifyReply): AbortSignal {
  const controller = new AbortController()
  request.raw.once('close', () => {
    if (!reply.raw.writableFinished) controller.abort()
  })
  return controller.signal
}

const eventRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const waiter = new FeedWaiter(() => feedMark(app.db))
  // Before the server waits for open requests to end: held long polls answer at once.
  app.addHook('preClose', () => waiter.close())

  app.get(
    '',
    {
      schema: {
        tags: ['Events'],
        operationId: 'readChangeFeed',
        summary: 'Read the organization’s events in commit order (change feed)',
        description: CHANGE_FEED_DESCRIPTION,
        querystring: ChangeFeedQuery,
        response: { 200: ChangeFeedEnvelope },
      },
    },
    async (request, reply) =>
      ok(
        'Events retrieved',
        await readChangeFeed(app.db, waiter, principalOf(request), request.query, clientGone(request, reply)),
      ),
  )
}

export default eventRoutes
