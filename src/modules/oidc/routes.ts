import formbody from '@fastify/formbody'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import type { FastifyError, FastifyRequest } from 'fastify'
import { ASSERTION_ALGORITHMS } from '../../../schemas/clients.js'
import {
  DiscoveryDocument,
  JsonWebKeySet,
  LogoutRequest,
  OAuthErrorBody,
  TokenRequest,
  TokenSet,
} from '../../../schemas/oidc.js'
import type { FhirScopeRules } from '../../access/grantable-scopes.js'
import { AppError, fromDatabaseError } from '../../errors.js'
import { loadVerificationKeys, toJwk } from '../../identity/signing-keys.js'
import type { TargetPolicy } from '../../outbox/targets.js'
import { signInsWhen } from '../../plugins/rate-limit.js'
import { createJwksFetcher, PUBLIC_HTTPS_ONLY } from '../clients/service.js'
import { type AssertionSettings, clientCredentials, grantTokens, logout, OAuthError } from './service.js'
import tokenInspectionRoutes, { CONFIDENTIAL_AUTH_METHODS } from './token-inspection-routes.js'

const tags = ['OpenID Connect']

/**
 * The embedded issuer as a discovery document describes it: its endpoints at Keycloak's paths and
 * what its token endpoint takes.
 */
export function embeddedIssuerMetadata(issuerUrl: string, scopesSupported: readonly string[]) {
  const endpoint = (name: string) => `${issuerUrl}/protocol/openid-connect/${name}`
  return {
    issuer: issuerUrl,
    authorizationEndpoint: endpoint('auth'),
    tokenEndpoint: endpoint('token'),
    userinfoEndpoint: endpoint('userinfo'),
    introspectionEndpoint: endpoint('token/introspect'),
    revocationEndpoint: endpoint('revoke'),
    endSessionEndpoint: endpoint('logout'),
    jwksUri: endpoint('certs'),
    grantTypesSupported: ['authorization_code', 'password', 'client_credentials', 'refresh_token'],
    codeChallengeMethodsSupported: ['S256'],
    // `none`: public clients (this API's own, public SMART apps) authenticate by client id alone.
    tokenEndpointAuthMethodsSupported: [
      'client_secret_basic',
      'client_secret_post',
      'private_key_jwt',
      'none',
    ],
    tokenEndpointAuthSigningAlgValuesSupported: [...ASSERTION_ALGORITHMS],
    scopesSupported: [...scopesSupported],
  }
}
const oauthError = (description: string) => ({ ...OAuthErrorBody, description })
// Every /realms call is rate limited, discovery and keys included.
const tooManyRequests = { 429: oauthError('Rate limit exceeded; see Retry-After (slow_down)') }
/** A password grant is a sign-in: limited by its failures, not counted as an anonymous call. */
const isPasswordGrant = (body: unknown) =>
  (body as { grant_type?: unknown } | undefined)?.grant_type === 'password'
// Wrong user credentials, or a client that failed to authenticate with them.
const credentialsRejected = (error: unknown) => error instanceof OAuthError && error.status === 401

const formErrors = {
  ...tooManyRequests,
  413: oauthError('The form is too large'),
  415: oauthError('The body is not application/x-www-form-urlencoded'),
  500: oauthError('Unexpected error'),
  503: oauthError('The database is unavailable'),
}

function toOAuthError(error: unknown): OAuthError {
  if (error instanceof OAuthError) return error
  if (error instanceof AppError && error.code === 'RATE_001')
    return new OAuthError(429, 'slow_down', error.details)
  const { validation, message, statusCode } = error as FastifyError
  if (validation) return new OAuthError(400, 'invalid_request', message)
  if (statusCode && statusCode >= 400 && statusCode < 500) {
    return new OAuthError(
      statusCode,
      'invalid_request',
      statusCode === 415 ? 'Send application/x-www-form-urlencoded' : message,
    )
  }
  if (fromDatabaseError(error)?.code === 'SYS_002') {
    return new OAuthError(503, 'temporarily_unavailable', 'The service is temporarily unavailable')
  }
  return new OAuthError(500, 'server_error', 'Unexpected error')
}

interface OidcRouteOptions {
  issuerUrl: string
  publicClientId: string
  /** Where clients' JWKS URLs may point: the webhook address policy; https and public hosts only if unset. */
  jwksUrls?: TargetPolicy
  /** The FHIR types and their role rules, for the SMART scopes client_credentials grants. */
  fhirScopes: FhirScopeRules
  /** The scopes discovery lists (SMART's as well as OpenID's). */
  scopesSupported: readonly string[]
}

/**
 * The embedded issuer at Keycloak's paths, so that a client written for a Keycloak realm works
 * unchanged: discovery, key set, token (password, client_credentials, refresh_token; client
 * secrets or, for SMART Backend Services, signed client assertions) and logout.
 * Form-encoded bodies are accepted here only; errors use the OAuth format, not the API envelope.
 */
const oidcRoutes: FastifyPluginAsyncTypebox<OidcRouteOptions> = async (
  app,
  { issuerUrl, publicClientId, jwksUrls = PUBLIC_HTTPS_ONLY, fhirScopes, scopesSupported },
) => {
  const issuer = app.tokenIssuer
  if (!issuer) return
  const clientKeys = createJwksFetcher(jwksUrls)
  app.addHook('onClose', clientKeys.close)
  // OAuth token requests are form-encoded only.
  app.removeContentTypeParser('application/json')
  await app.register(formbody)
  app.setErrorHandler((error, request, reply) => {
    const oauth = toOAuthError(error)
    if (oauth.status >= 500)
      request.log.error({ err: { message: (error as Error).message } }, 'token endpoint failed')
    if (oauth.error === 'invalid_client' && oauth.status === 401) reply.header('www-authenticate', 'Basic')
    return reply.code(oauth.status).send({ error: oauth.error, error_description: oauth.description })
  })

  const metadata = embeddedIssuerMetadata(issuerUrl, scopesSupported)
  const assertionsOf = (request: FastifyRequest): AssertionSettings => ({
    keys: clientKeys,
    audiences: [metadata.tokenEndpoint, issuerUrl],
    onKeysUnavailable: (clientId) =>
      request.log.warn({ clientId }, 'the client’s JWKS URL gave no usable key set'),
  })

  app.get(
    '/.well-known/openid-configuration',
    {
      schema: {
        tags,
        operationId: 'openidConfiguration',
        summary: 'OpenID Connect discovery',
        security: [],
        response: { 200: DiscoveryDocument, ...tooManyRequests },
      },
    },
    async () => ({
      issuer: metadata.issuer,
      authorization_endpoint: metadata.authorizationEndpoint,
      token_endpoint: metadata.tokenEndpoint,
      userinfo_endpoint: metadata.userinfoEndpoint,
      introspection_endpoint: metadata.introspectionEndpoint,
      revocation_endpoint: metadata.revocationEndpoint,
      end_session_endpoint: metadata.endSessionEndpoint,
      jwks_uri: metadata.jwksUri,
      grant_types_supported: metadata.grantTypesSupported,
      response_types_supported: ['code'],
      code_challenge_methods_supported: metadata.codeChallengeMethodsSupported,
      subject_types_supported: ['public'],
      id_token_signing_alg_values_supported: ['RS256'],
      token_endpoint_auth_methods_supported: metadata.tokenEndpointAuthMethodsSupported,
      token_endpoint_auth_signing_alg_values_supported: metadata.tokenEndpointAuthSigningAlgValuesSupported,
      introspection_endpoint_auth_methods_supported: CONFIDENTIAL_AUTH_METHODS,
      introspection_endpoint_auth_signing_alg_values_supported: [...ASSERTION_ALGORITHMS],
      // The public client revokes its own tokens with its client_id alone (RFC 7009 §2.1).
      revocation_endpoint_auth_methods_supported: [...CONFIDENTIAL_AUTH_METHODS, 'none'],
      revocation_endpoint_auth_signing_alg_values_supported: [...ASSERTION_ALGORITHMS],
      scopes_supported: metadata.scopesSupported,
      claims_supported: [
        'sub',
        'iss',
        'aud',
        'exp',
        'iat',
        'email',
        'name',
        'given_name',
        'family_name',
        'preferred_username',
        'groups',
        'fhirUser',
      ],
    }),
  )

  app.get(
    '/protocol/openid-connect/certs',
    {
      schema: {
        tags,
        operationId: 'jsonWebKeySet',
        summary: 'Keys that verify access tokens (current and recently retired)',
        security: [],
        response: { 200: JsonWebKeySet, ...tooManyRequests },
      },
    },
    async () => {
      const keys = await loadVerificationKeys(app.db)
      return { keys: [...keys].map(([kid, pem]) => toJwk(kid, pem)) }
    },
  )

  app.post(
    '/protocol/openid-connect/token',
    {
      config: signInsWhen((request) => isPasswordGrant(request.body)),
      schema: {
        tags,
        operationId: 'token',
        summary: 'Token endpoint (application/x-www-form-urlencoded)',
        description:
          'Grants: authorization_code (a SMART app: code, redirect_uri, code_verifier; client_id for a public app; a confidential app authenticates with its secret, or, registered with keys, with client_assertion_type and client_assertion), password (client_id, username, password), client_credentials (a confidential client: client_id and client_secret, in the form or HTTP Basic; or, with registered keys, client_assertion_type and client_assertion, RFC 7523 as SMART Backend Services profiles it), refresh_token (refresh_token; client_id, which the public client may leave out). A refresh token works once; the answer carries its replacement. The answer’s scope says what was granted: online_access and offline_access when asked for, and for client_credentials the SMART system scopes the client’s roles allow.',
        security: [],
        consumes: ['application/x-www-form-urlencoded'],
        body: TokenRequest,
        response: {
          200: TokenSet,
          400: oauthError(
            'Bad request, bad or expired refresh token (invalid_grant), no grantable scope among those asked for (invalid_scope), unsupported grant',
          ),
          401: oauthError(
            'Unknown or deactivated client, wrong secret, or a client assertion that is invalid, expired or used before (invalid_client); wrong user credentials (invalid_grant)',
          ),
          ...formErrors,
        },
      },
    },
    async (request, reply) => {
      reply.header('cache-control', 'no-store')
      const grant = () => {
        const credentials = clientCredentials(request.headers.authorization, {
          clientId: request.body.client_id,
          secret: request.body.client_secret,
          assertionType: request.body.client_assertion_type,
          assertion: request.body.client_assertion,
        })
        return grantTokens(
          app.db,
          issuer,
          publicClientId,
          request.body,
          credentials,
          assertionsOf(request),
          fhirScopes,
          request.id,
        )
      }
      if (!isPasswordGrant(request.body)) return grant()
      return app.signInAttempt(request, reply, request.body.username, grant, credentialsRejected)
    },
  )

  app.post(
    '/protocol/openid-connect/logout',
    {
      schema: {
        tags,
        operationId: 'endSession',
        summary: 'End the session of a refresh token (application/x-www-form-urlencoded)',
        security: [],
        consumes: ['application/x-www-form-urlencoded'],
        body: LogoutRequest,
        response: {
          204: Type.Null({ description: 'The session has ended' }),
          400: oauthError('Unknown refresh token, or one of another client (invalid_grant)'),
          401: oauthError('Unknown client or wrong secret (invalid_client)'),
          ...formErrors,
        },
      },
    },
    async (request, reply) => {
      const credentials = clientCredentials(request.headers.authorization, {
        clientId: request.body.client_id,
        secret: request.body.client_secret,
      })
      await logout(app.db, publicClientId, request.body.refresh_token, credentials)
      return reply.code(204).send(null)
    },
  )

  await app.register(tokenInspectionRoutes, { publicClientId, assertionsOf })
}

export default oidcRoutes
