import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { CurrentUserEnvelope, LoginBody, LoginEnvelope } from '../../../schemas/auth.js'
import { ok } from '../../lib/envelope.js'
import { principalOf } from '../../plugins/auth.js'
import { errorResponse } from '../../plugins/route-conventions.js'
import { currentUser, login } from './service.js'

const tags = ['Authentication']

const authRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const issuer = app.tokenIssuer
  // With an external identity provider, clients obtain tokens from the provider itself.
  if (issuer) {
    app.post(
      '/login',
      {
        schema: {
          tags,
          operationId: 'login',
          summary: 'Sign in with e-mail and password',
          description: 'Returns an RS256 access token (3600 s) and a refresh token (86400 s).',
          body: LoginBody,
          response: {
            200: LoginEnvelope,
            401: errorResponse(401, 'Invalid username or password (AUTH_001)'),
          },
        },
      },
      async (request) => ok('Login successful', await login(app.db, issuer, request.body)),
    )
  }

  app.get(
    '/me',
    {
      schema: {
        tags,
        operationId: 'getCurrentUser',
        summary: 'The signed-in user',
        response: { 200: CurrentUserEnvelope },
      },
    },
    async (request) => ok('Current user', currentUser(principalOf(request))),
  )
}

export default authRoutes
