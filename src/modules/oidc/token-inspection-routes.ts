import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import {
  Introspection,
  IntrospectionRequest,
  OAuthErrorBody,
  RevocationRequest,
  UserInfo,
} from '../../../schemas/oidc.js'
import { AppError } from '../../errors.js'
import { bearerTokenOf } from '../../http/request-principal.js'
import { type AssertionSettings, clientCredentials, OAuthError } from './service.js'
import { introspect, revoke, userInfo, type VerifyAccessToken } from './token-inspection.js'

const tags = ['OpenID Connect']
const oauthError = (description: string) => ({ ...OAuthErrorBody, description })
const serverErrors = {
  429: oauthError('Rate limit exceeded; see Retry-After (slow_down)'),
  500: oauthError('Unexpected error'),
  503: oauthError('The database is unavailable'),
}
const formErrors = {
  ...serverErrors,
  413: oauthError('The form is too large'),
  415: oauthError('The body is not application/x-www-form-urlencoded'),
}

/**
 * How a confidential client authenticates at introspection and revocation, as at the token
 * endpoint: a secret in HTTP Basic or the form, or an assertion signed with its key.
 */
export const CONFIDENTIAL_AUTH_METHODS = ['client_secret_basic', 'client_secret_post', 'private_key_jwt']

/**
 * RFC 6750 §3.1: a request without a token gets the scheme alone, one with a refused token the
 * invalid_token error.
 */
function bearerChallenge(reply: FastifyReply, description?: string) {
  const quoted = description?.replace(/["\\]/g, '')
  reply.header(
    'www-authenticate',
    description === undefined ? 'Bearer' : `Bearer error="invalid_token", error_description="${quoted}"`,
  )
}

interface TokenInspectionOptions {
  publicClientId: string
  /** How client assertions are checked, as at the token endpoint. */
  assertionsOf(request: FastifyRequest): AssertionSettings
}

/**
 * UserInfo (OpenID Connect Core §5.3), token introspection (RFC 7662) and revocation (RFC 7009)
 * of the embedded issuer, at Keycloak's paths. Registered inside the OpenID plugin: its form
 * parser and OAuth error format apply.
 */
const tokenInspectionRoutes: FastifyPluginAsyncTypebox<TokenInspectionOptions> = async (
  app,
  { publicClientId, assertionsOf },
) => {
  const credentialsOf = (request: FastifyRequest<{ Body: IntrospectionRequest | RevocationRequest }>) =>
    clientCredentials(request.headers.authorization, {
      clientId: request.body.client_id,
      secret: request.body.client_secret,
      assertionType: request.body.client_assertion_type,
      assertion: request.body.client_assertion,
    })

  const verifierFor =
    (request: FastifyRequest): VerifyAccessToken =>
    (token) =>
      app.verifyAccessToken(request, token)

  const userInfoSchema = (operationId: string, errors: Record<number, typeof OAuthErrorBody>) => ({
    operationId,
    tags,
    summary: 'Claims about the signed-in user (OpenID Connect UserInfo)',
    description:
      'The access token in `Authorization: Bearer` (by GET or POST alike; a form’s `access_token` is not read), checked as every API request’s is (signature, expiry, session not ended, account active). The claims of the account, and SMART’s `fhirUser` for a provider’s or a patient’s own account. A refused token is 401 with `WWW-Authenticate: Bearer error="invalid_token"`.',
    response: {
      200: UserInfo,
      401: oauthError(
        'No token (invalid_request), or one that is invalid, expired or revoked (invalid_token)',
      ),
      ...errors,
    },
  })
  const answerUserInfo = async (request: FastifyRequest, reply: FastifyReply) => {
    reply.header('cache-control', 'no-store')
    if (!bearerTokenOf(request)) {
      bearerChallenge(reply)
      throw new OAuthError(
        401,
        'invalid_request',
        'An Authorization: Bearer <access token> header is required',
      )
    }
    try {
      return await userInfo(app.db, await app.authenticate(request))
    } catch (error) {
      if (!(error instanceof AppError) || error.status >= 500) throw error
      const description = error.details
      bearerChallenge(reply, description)
      throw new OAuthError(401, 'invalid_token', description)
    }
  }
  app.get(
    '/protocol/openid-connect/userinfo',
    { schema: userInfoSchema('userInfo', serverErrors) },
    answerUserInfo,
  )
  app.post(
    '/protocol/openid-connect/userinfo',
    {
      schema: userInfoSchema('userInfoByPost', {
        ...formErrors,
        400: oauthError('A malformed form (invalid_request)'),
      }),
    },
    answerUserInfo,
  )

  app.post(
    '/protocol/openid-connect/token/introspect',
    {
      schema: {
        tags,
        operationId: 'introspectToken',
        summary: 'Token introspection, RFC 7662 (application/x-www-form-urlencoded)',
        description:
          'A confidential client (its secret in HTTP Basic or the form, or a client assertion signed with its key as at the token endpoint) asks whether an access or refresh token of this issuer is active. Only tokens of the client’s own organization are reported active; anything invalid, expired, revoked, unknown or of another organization is `{ "active": false }`. An access token is checked as an API request’s is.',
        security: [],
        consumes: ['application/x-www-form-urlencoded'],
        body: IntrospectionRequest,
        response: {
          200: Introspection,
          400: oauthError('No token, or a bad form (invalid_request)'),
          401: oauthError(
            'No client, an unknown one, a wrong secret or assertion, or a public client (invalid_client)',
          ),
          ...formErrors,
        },
      },
    },
    async (request, reply) => {
      reply.header('cache-control', 'no-store')
      const client = { credentials: credentialsOf(request), assertions: assertionsOf(request) }
      return introspect(app.db, publicClientId, client, request.body.token, verifierFor(request))
    },
  )

  app.post(
    '/protocol/openid-connect/revoke',
    {
      schema: {
        tags,
        operationId: 'revokeToken',
        summary: 'Token revocation, RFC 7009 (application/x-www-form-urlencoded)',
        description:
          'Ends the session of a refresh token, or of an access token (its `sid`): the session’s refresh token is refused from then on, and its access tokens stop working within 5 s, as after a sign-out. The client authenticates as at the token endpoint: a confidential client with its secret or a client assertion signed with its key, a public client with its client_id alone. An unknown, invalid or expired token is no error (200, RFC 7009 §2.2). A token issued to another client is refused with 400 unauthorized_client and nothing is revoked: RFC 7009 §2.1 has the server verify that the token was issued to the requesting client and refuse the request if not.',
        security: [],
        consumes: ['application/x-www-form-urlencoded'],
        body: RevocationRequest,
        response: {
          200: Type.Null({ description: 'Revoked, or nothing to revoke (no body)' }),
          400: oauthError(
            'No token (invalid_request); a token issued to another client (unauthorized_client)',
          ),
          401: oauthError('No client, an unknown one, or a wrong secret or assertion (invalid_client)'),
          ...formErrors,
        },
      },
    },
    async (request, reply) => {
      const client = { credentials: credentialsOf(request), assertions: assertionsOf(request) }
      await revoke(app.db, publicClientId, client, request.body.token, verifierFor(request))
      // No body at all, as Keycloak answers: `null` would be serialized to the text `null`.
      return reply.code(200).send(undefined as unknown as null)
    },
  )
}

export default tokenInspectionRoutes
