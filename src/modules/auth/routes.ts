import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import type { FastifyReply } from 'fastify'
import {
  CurrentUserEnvelope,
  FlatLoginResponse,
  FlatRefreshResponse,
  IdpLoginBody,
  LoginBody,
  LoginEnvelope,
  LogoutBody,
  RefreshBody,
  RefreshEnvelope,
  SignInRefused,
} from '../../../schemas/auth.js'
import { AppError, invalidFields } from '../../errors.js'
import { errorBody, ok } from '../../http/envelope.js'
import { principalOf } from '../../http/request-principal.js'
import { errorResponse, nameResponse } from '../../http/responses.js'
import type { IssuedTokens, SignInResult } from '../../identity/backends.js'
import type { Mailer } from '../../lib/mailer.js'
import { SIGN_IN_ROUTE } from '../../plugins/rate-limit.js'
import passwordRoutes from './password-routes.js'
import { currentUser, presentedRefreshToken } from './service.js'

const SIGN_IN_REFUSED =
  "The password is temporary: change it first (AUTH_004, with data.requiresPasswordChange). External provider: the token's groups match no organization (AUTH_003)"

const tags = ['Authentication']

interface AuthRoutesOptions {
  loginStyle: 'envelope' | 'flat'
  external: boolean
  mailer: Mailer
  passwordResetUrl: string
}

const authRoutes: FastifyPluginAsyncTypebox<AuthRoutesOptions> = async (
  app,
  { loginStyle, external, mailer, passwordResetUrl },
) => {
  const flat = loginStyle === 'flat'
  const backend = app.authBackend
  // With an external identity provider, the provider owns the passwords.
  if (!external) await app.register(passwordRoutes, { mailer, resetUrl: passwordResetUrl })

  function signInResponse(result: SignInResult, reply: FastifyReply) {
    if (result.kind === 'password-change-required') {
      // Sent here rather than thrown: the error handler's envelope has no `data`.
      const refused = new AppError(
        'AUTH_004',
        'The password is temporary and must be changed before signing in',
      )
      return reply
        .code(refused.status)
        .send({ ...errorBody(refused), data: { requiresPasswordChange: true } } satisfies SignInRefused)
    }
    return tokensResponse(result, 'Login successful', { user: result.user })
  }

  /** Issued tokens as this deployment answers them: flat OAuth-style fields, or in the envelope. */
  function tokensResponse<T extends object>(tokens: IssuedTokens, message: string, more: T) {
    if (flat) {
      return {
        access_token: tokens.accessToken,
        refresh_token: tokens.refreshToken,
        expires_in: tokens.expiresIn,
        token_type: 'Bearer' as const,
      }
    }
    return ok(message, {
      token: tokens.accessToken,
      refreshToken: tokens.refreshToken,
      expiresIn: tokens.expiresIn,
      ...more,
    })
  }

  nameResponse(403, SIGN_IN_REFUSED, 'SignInForbidden')
  const signInSchema = {
    200: flat ? FlatLoginResponse : LoginEnvelope,
    401: errorResponse(401, 'Invalid username or password (AUTH_001)', 'InvalidCredentials'),
    403: { ...SignInRefused, description: SIGN_IN_REFUSED },
    503: errorResponse(
      503,
      'The database or the identity provider is unavailable (SYS_002, SYS_001)',
      'IdentityUnavailable',
    ),
  }
  const issuerNote = external
    ? 'This deployment forwards to its external identity provider.'
    : 'This deployment issues its own tokens.'

  app.post(
    '/login',
    {
      config: SIGN_IN_ROUTE,
      schema: {
        tags,
        operationId: 'login',
        summary: 'Sign in with e-mail and password',
        description: `Returns an RS256 access token (3600 s) and a refresh token (86400 s), ${
          flat ? 'as a flat OAuth-style object (LOGIN_RESPONSE_STYLE=flat)' : 'in the envelope'
        }. A correct but temporary password gets no tokens: 403 AUTH_004 with data.requiresPasswordChange, and the user changes it with POST /api/auth/change-password before signing in. ${issuerNote}`,
        body: LoginBody,
        response: signInSchema,
      },
    },
    async (request, reply) => {
      const { username, password } = request.body
      const result = await app.signInAttempt(request, reply, username, () =>
        backend.passwordLogin(username, password),
      )
      return signInResponse(result, reply)
    },
  )

  app.post(
    '/idp-login',
    {
      config: SIGN_IN_ROUTE,
      schema: {
        tags,
        operationId: 'identityProviderLogin',
        summary: 'Sign in through the external identity provider',
        description:
          'With username and password, performs the provider’s password grant; with an authorization code and its redirect URI (and PKCE verifier), exchanges the code. Answers like /api/auth/login. 400 VAL_001 when no external provider is configured.',
        body: IdpLoginBody,
        response: {
          ...signInSchema,
          400: errorResponse(
            400,
            'No external provider configured, or a bad authorization code (VAL_001, AUTH_001)',
          ),
        },
      },
    },
    async (request, reply) => {
      const { username, password, code, redirectUri, codeVerifier } = request.body
      if (!external)
        throw new AppError('VAL_001', 'No external identity provider is configured', { status: 400 })
      if (code && redirectUri) {
        // A code names no account: its failures count for the address only.
        const result = await app.signInAttempt(request, reply, undefined, () =>
          backend.codeLogin(code, redirectUri, codeVerifier),
        )
        return signInResponse(result, reply)
      }
      if (username && password) {
        const result = await app.signInAttempt(request, reply, username, () =>
          backend.passwordLogin(username, password),
        )
        return signInResponse(result, reply)
      }
      const missing = Object.entries({ username, password, code, redirectUri })
        .filter(([, value]) => !value)
        .map(([path]) => ({
          path,
          message: 'is required: send username and password, or code and redirectUri',
        }))
      throw invalidFields(missing, 'Send username and password, or code and redirectUri', 'VAL_002')
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
    async (request) =>
      tokensResponse(await backend.refresh(presentedRefreshToken(request.body)), 'Token refreshed', {}),
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
      await backend.logout(presentedRefreshToken(request.body))
      return reply.code(204).send(null)
    },
  )

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
