import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import {
  CurrentUserEnvelope,
  FlatLoginResponse,
  FlatRefreshResponse,
  LoginBody,
  LoginEnvelope,
  LogoutBody,
  PasswordChangeRequired,
  RefreshBody,
  RefreshEnvelope,
} from '../../../schemas/auth.js'
import { ok } from '../../lib/envelope.js'
import type { Mailer } from '../../lib/mailer.js'
import { principalOf } from '../../plugins/auth.js'
import { errorResponse } from '../../plugins/route-conventions.js'
import passwordRoutes from './password-routes.js'
import { currentUser, login, presentedRefreshToken } from './service.js'
import { endSession, refreshSession } from './sessions.js'

const tags = ['Authentication']

const passwordChangeRequired = {
  success: false as const,
  message: 'The password is temporary and must be changed before signing in',
  data: { requiresPasswordChange: true as const },
}

interface AuthRoutesOptions {
  loginStyle: 'envelope' | 'flat'
  clientId: string
  mailer: Mailer
  passwordResetUrl: string
}

const authRoutes: FastifyPluginAsyncTypebox<AuthRoutesOptions> = async (
  app,
  { loginStyle, clientId, mailer, passwordResetUrl },
) => {
  const flat = loginStyle === 'flat'
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

  const issuer = app.tokenIssuer
  // With an external identity provider, clients obtain tokens from the provider itself, and the
  // provider owns the passwords.
  if (!issuer) return

  await app.register(passwordRoutes, { mailer, resetUrl: passwordResetUrl })

  app.post(
    '/login',
    {
      schema: {
        tags,
        operationId: 'login',
        summary: 'Sign in with e-mail and password',
        description: `Returns an RS256 access token (3600 s) and a refresh token (86400 s), ${
          flat
            ? 'as a flat OAuth-style object (this deployment uses LOGIN_RESPONSE_STYLE=flat)'
            : 'in the envelope'
        }. An account with a temporary password gets success=false and data.requiresPasswordChange instead.`,
        body: LoginBody,
        response: {
          200: Type.Union([flat ? FlatLoginResponse : LoginEnvelope, PasswordChangeRequired]),
          401: errorResponse(401, 'Invalid username or password (AUTH_001)'),
        },
      },
    },
    async (request) => {
      const outcome = await login(app.db, issuer, request.body, clientId)
      if (outcome.kind === 'password-change-required') return passwordChangeRequired
      const { tokens, user } = outcome
      if (flat) {
        return {
          access_token: tokens.accessToken,
          refresh_token: tokens.refreshToken,
          expires_in: tokens.expiresIn,
          token_type: 'Bearer' as const,
        }
      }
      return ok('Login successful', {
        token: tokens.accessToken,
        refreshToken: tokens.refreshToken,
        expiresIn: tokens.expiresIn,
        user,
      })
    },
  )

  app.post(
    '/refresh',
    {
      schema: {
        tags,
        operationId: 'refreshToken',
        summary: 'Exchange a refresh token for new tokens',
        description:
          'Returns a new access token and a new refresh token; the one sent stops working. Presenting a refresh token that was already exchanged ends its whole session (it was copied).',
        body: RefreshBody,
        response: {
          200: flat ? FlatRefreshResponse : RefreshEnvelope,
          400: errorResponse(400, 'The refresh token is invalid, expired, revoked or reused (AUTH_001)'),
        },
      },
    },
    async (request) => {
      const tokens = await refreshSession(app.db, issuer, presentedRefreshToken(request.body))
      if (flat) {
        return {
          access_token: tokens.accessToken,
          expires_in: tokens.expiresIn,
          refresh_token: tokens.refreshToken,
          token_type: 'Bearer' as const,
        }
      }
      return ok('Token refreshed', {
        token: tokens.accessToken,
        refreshToken: tokens.refreshToken,
        expiresIn: tokens.expiresIn,
      })
    },
  )

  app.post(
    '/logout',
    {
      schema: {
        tags,
        operationId: 'logout',
        summary: 'End the session of a refresh token',
        description:
          'Its refresh tokens stop working at once; access tokens already issued stay valid until they expire (at most 3600 s). Answers 204 also for an unknown token, so it is safe to repeat.',
        body: LogoutBody,
        response: { 204: Type.Null({ description: 'The session has ended' }) },
      },
    },
    async (request, reply) => {
      await endSession(app.db, presentedRefreshToken(request.body))
      return reply.code(204).send(null)
    },
  )
}

export default authRoutes
