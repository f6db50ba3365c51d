import { randomUUID } from 'node:crypto'
import type { Db } from '../../../db/database.js'
import type { TokenRequest, TokenSet } from '../../../schemas/oidc.js'
import { type FhirScopeRules, grantableScopes } from '../../access/grantable-scopes.js'
import { authorityOf } from '../../access/roles.js'
import { AppError } from '../../errors.js'
import { findTokenSubject } from '../../identity/account-queries.js'
import { checkPassword } from '../../identity/login.js'
import {
  endSession,
  refreshSession,
  type SessionTokens,
  sessionOfRefreshToken,
  startSession,
} from '../../identity/sessions.js'
import type { TokenIssuer } from '../../identity/token-issuer.js'
import { ACCESS_TOKEN_TTL_SECONDS } from '../../identity/token-lifetimes.js'
import {
  AssertionRefused,
  authenticateClient,
  authenticateClientAssertion,
  claimedClient,
  JWT_BEARER,
  type JwksFetcher,
} from '../clients/service.js'
import {
  authenticateApp,
  authenticateAppAssertion,
  findActiveApp,
  type SmartAppRow as SmartApp,
} from '../smart-apps/service.js'
import { appTokenSet, authorizationCodeGrant } from '../smart-launch/service.js'

/** An error in the OAuth 2.0 format (`error`, `error_description`), as a Keycloak realm answers. */
export class OAuthError extends Error {
  constructor(
    readonly status: number,
    readonly error: string,
    readonly description: string,
  ) {
    super(description)
  }
}

const invalidRequest = (description: string) => new OAuthError(400, 'invalid_request', description)

export interface ClientCredentials {
  clientId?: string
  secret?: string
  /** RFC 7523 client authentication (private_key_jwt): the assertion's type and the JWT. */
  assertionType?: string
  assertion?: string
}

const usesAssertion = (credentials: ClientCredentials) =>
  credentials.assertion !== undefined || credentials.assertionType !== undefined

// RFC 6749 §2.3: a client uses one authentication method per request.
const oneMethod = () =>
  invalidRequest('Authenticate the client one way: a secret or a client assertion, not both')

/**
 * Client credentials from HTTP Basic authentication (client_secret_basic), the form
 * (client_secret_post) or a client assertion in the form (private_key_jwt).
 */
export function clientCredentials(
  authorization: string | undefined,
  form: ClientCredentials,
): ClientCredentials {
  if (!authorization?.startsWith('Basic ')) return form
  if (usesAssertion(form)) throw oneMethod()
  const decoded = Buffer.from(authorization.slice(6), 'base64').toString('utf8')
  const separator = decoded.indexOf(':')
  if (separator < 0) throw new OAuthError(401, 'invalid_client', 'Malformed Basic authentication')
  return {
    clientId: decodeURIComponent(decoded.slice(0, separator)),
    secret: decodeURIComponent(decoded.slice(separator + 1)),
  }
}

export interface Client {
  clientId: string
  /** Set for confidential clients: the service account they act as. */
  serviceUserId?: number
  /** Set for a registered SMART app. */
  app?: SmartApp
  /** A refresh that named no client: only a public client's refresh token is taken then. */
  anonymous?: true
}

/** How the token endpoint checks client assertions: whose keys, and the URL they must be meant for. */
export interface AssertionSettings {
  keys: JwksFetcher
  /**
   * What the assertion's `aud` may be: the token endpoint's URL, as advertised, or the issuer's
   * (which openid-client and other libraries send, and Keycloak accepts too).
   */
  audiences: readonly string[]
  /** A client's JWKS URL did not answer usably: for the operator, by client id only. */
  onKeysUnavailable(clientId: string): void
}

/**
 * A confidential client that signed an assertion with one of its registered keys (RFC 7523): a
 * registered SMART app, or a Backend Services client.
 */
async function assertedClient(
  db: Db,
  credentials: ClientCredentials,
  settings: AssertionSettings,
): Promise<Client> {
  const { assertionType, assertion, secret, clientId } = credentials
  if (assertionType !== JWT_BEARER) throw invalidRequest(`client_assertion_type must be ${JWT_BEARER}`)
  if (!assertion) throw invalidRequest('client_assertion is required with client_assertion_type')
  if (secret !== undefined) throw oneMethod()
  let claimed: string | undefined
  try {
    claimed = claimedClient(assertion)
    // A client_id in the form, optional with an assertion, must name the same client.
    if (clientId !== undefined && clientId !== claimed) throw new AssertionRefused()
    const { keys, audiences } = settings
    const app = await findActiveApp(db, claimed)
    if (app) {
      await authenticateAppAssertion(db, keys, app, assertion, audiences)
      return { clientId: claimed, app }
    }
    const client = await authenticateClientAssertion(db, keys, claimed, assertion, audiences)
    return { clientId: claimed, serviceUserId: client.userId }
  } catch (error) {
    if (!(error instanceof AssertionRefused)) throw error
    if (error.keysUnavailable && claimed) settings.onKeysUnavailable(claimed)
    throw new OAuthError(401, 'invalid_client', error.message)
  }
}

/**
 * The public client (this API's own client id) needs no secret; any other must be a confidential
 * client, with its secret or, where the endpoint takes them, a client assertion. With
 * `publicByDefault` (a refresh), a request naming no client is the public client's (RFC 6749 §6
 * asks public clients for no client_id there), so only a refresh token bound to it works.
 */
export async function identifyClient(
  db: Db,
  publicClientId: string,
  credentials: ClientCredentials,
  assertions?: AssertionSettings,
  publicByDefault = false,
): Promise<Client> {
  if (usesAssertion(credentials)) {
    if (!assertions) throw invalidRequest('A client assertion is not accepted here')
    return assertedClient(db, credentials, assertions)
  }
  const { clientId, secret } = credentials
  if (!clientId && publicByDefault && secret === undefined)
    return { clientId: publicClientId, anonymous: true }
  if (!clientId) throw new OAuthError(401, 'invalid_client', 'client_id is required')
  if (clientId === publicClientId) return { clientId } satisfies Client
  const app = await findActiveApp(db, clientId)
  if (app) {
    if (!(await authenticateApp(db, app, { secret }))) {
      throw new OAuthError(401, 'invalid_client', 'Invalid client or client credentials')
    }
    return { clientId, app }
  }
  const client = await authenticateClient(db, clientId, secret ?? '')
  if (!client) throw new OAuthError(401, 'invalid_client', 'Invalid client or client credentials')
  return { clientId, serviceUserId: client.userId } satisfies Client
}

function toTokenSet(tokens: SessionTokens): TokenSet {
  return {
    access_token: tokens.accessToken,
    expires_in: tokens.expiresIn,
    refresh_expires_in: tokens.refreshExpiresIn,
    refresh_token: tokens.refreshToken,
    token_type: 'Bearer',
    'not-before-policy': 0,
    session_state: tokens.sessionId,
    scope: [...BASE_SCOPES, ...tokens.scopes].join(' '),
  }
}

const BASE_SCOPES = ['openid', 'profile', 'email']
// SMART's refresh scopes: every session has a refresh token, so either is granted when asked for.
const SESSION_SCOPES = ['online_access', 'offline_access']

const requestedScopes = (requested: string | undefined) =>
  (requested ?? '').split(' ').filter((scope) => scope !== '' && !BASE_SCOPES.includes(scope))

async function passwordGrant(db: Db, issuer: TokenIssuer, client: Client, request: TokenRequest) {
  if (!request.username || !request.password) throw invalidRequest('username and password are required')
  let user: Awaited<ReturnType<typeof checkPassword>>
  try {
    user = await checkPassword(db, request.username, request.password)
  } catch (error) {
    // Only the credentials' own failure; a refusal (a saturated hashing pool) answers as itself.
    if (error instanceof AppError && error.code === 'AUTH_001')
      throw new OAuthError(401, 'invalid_grant', 'Invalid user credentials')
    throw error
  }
  if (user.password_change_required) throw new OAuthError(400, 'invalid_grant', 'Account is not fully set up')
  const scopes = requestedScopes(request.scope).filter((scope) => SESSION_SCOPES.includes(scope))
  return toTokenSet(await startSession(db, issuer, user.id, client.clientId, [...new Set(scopes)]))
}

/**
 * Whether the client of a refresh may refresh a session of `sessionClient`: its own; or, when the
 * refresh names no client, a public client's (this API's own, or a public SMART app's).
 */
async function mayRefresh(db: Db, client: Client, publicClientId: string, sessionClient: string) {
  if (!client.anonymous) return sessionClient === client.clientId
  if (sessionClient === publicClientId) return true
  const app = await findActiveApp(db, sessionClient)
  return app !== undefined && !app.confidential
}

async function refreshTokenGrant(
  db: Db,
  issuer: TokenIssuer,
  client: Client,
  request: TokenRequest,
  publicClientId: string,
) {
  if (!request.refresh_token) throw invalidRequest('refresh_token is required')
  // Read before the refresh's transaction, which must not wait for another connection.
  const session = await sessionOfRefreshToken(db, request.refresh_token)
  if (session && request.scope !== undefined) {
    // A refresh may narrow nothing and widen nothing (RFC 6749 §6): only scopes already granted.
    const beyond = requestedScopes(request.scope).filter((scope) => !session.scopes.includes(scope))
    if (beyond.length > 0)
      throw new OAuthError(400, 'invalid_scope', `Not granted before: ${beyond.join(' ')}`)
  }
  const allowed = session !== undefined && (await mayRefresh(db, client, publicClientId, session.clientId))
  try {
    const tokens = await refreshSession(
      db,
      issuer,
      request.refresh_token,
      (sessionClient) => allowed && sessionClient === session?.clientId,
    )
    const app = client.app ?? (client.anonymous ? await findActiveApp(db, tokens.clientId) : undefined)
    return app ? appTokenSet(tokens) : toTokenSet(tokens)
  } catch (error) {
    if (error instanceof AppError && error.status === 400) {
      throw new OAuthError(400, 'invalid_grant', 'Invalid refresh token')
    }
    throw error
  }
}

/**
 * The SMART Backend Services scopes a client_credentials request asks for (`system/…`), as far as
 * they can be granted (RFC 6749 §3.3 lets the server grant less than asked; the answer's `scope`
 * says what). Nothing grantable among those asked for is invalid_scope.
 */
function systemScopes(
  requested: string | undefined,
  authorities: ReadonlySet<string>,
  fhir: FhirScopeRules,
): string[] {
  const asked = requestedScopes(requested)
  if (asked.length === 0) return []
  const granted = [...new Set(asked.flatMap((scope) => grantableScopes(scope, authorities, fhir)))]
  if (granted.length === 0) {
    throw new OAuthError(400, 'invalid_scope', `Scopes this client cannot be granted: ${asked.join(' ')}`)
  }
  return granted
}

/** A service account's token: no session and no refresh token, as Keycloak does by default. */
async function clientCredentialsGrant(
  db: Db,
  issuer: TokenIssuer,
  client: Client,
  request: TokenRequest,
  fhir: FhirScopeRules,
): Promise<TokenSet> {
  if (client.serviceUserId === undefined) {
    throw new OAuthError(400, 'unauthorized_client', 'Only confidential clients may use client_credentials')
  }
  const subject = await findTokenSubject(db, client.serviceUserId)
  if (!subject) throw new OAuthError(401, 'invalid_client', 'The client is disabled')
  const scopes = systemScopes(request.scope, new Set(subject.roles.map(authorityOf)), fhir)
  const sessionState = randomUUID()
  return {
    access_token: issuer.issueAccessToken(subject, sessionState, {
      requestedBy: client.clientId,
      smart: { scopes },
    }),
    expires_in: ACCESS_TOKEN_TTL_SECONDS,
    refresh_expires_in: 0,
    token_type: 'Bearer',
    'not-before-policy': 0,
    session_state: sessionState,
    scope: [...BASE_SCOPES, ...scopes].join(' '),
  }
}

export async function grantTokens(
  db: Db,
  issuer: TokenIssuer,
  publicClientId: string,
  request: TokenRequest,
  credentials: ClientCredentials,
  assertions: AssertionSettings,
  fhir: FhirScopeRules,
  requestId: string,
): Promise<TokenSet> {
  const refresh = request.grant_type === 'refresh_token'
  const client = await identifyClient(db, publicClientId, credentials, assertions, refresh)
  switch (request.grant_type) {
    case 'authorization_code': {
      if (!client.app)
        throw new OAuthError(400, 'unauthorized_client', 'Only registered SMART apps use codes')
      const answer = await authorizationCodeGrant(db, issuer, client.app, request, requestId)
      if ('error' in answer) throw new OAuthError(answer.status, answer.error, answer.description)
      return answer
    }
    case 'password':
      if (client.app) throw new OAuthError(400, 'unauthorized_client', 'SMART apps sign users in with a code')
      return passwordGrant(db, issuer, client, request)
    case 'refresh_token':
      return refreshTokenGrant(db, issuer, client, request, publicClientId)
    case 'client_credentials':
      return clientCredentialsGrant(db, issuer, client, request, fhir)
    default:
      throw new OAuthError(400, 'unsupported_grant_type', `Unsupported grant_type ${request.grant_type}`)
  }
}

export async function logout(
  db: Db,
  publicClientId: string,
  refreshToken: string,
  credentials: ClientCredentials,
): Promise<void> {
  const client = await identifyClient(db, publicClientId, credentials)
  if (!(await endSession(db, refreshToken, client.clientId))) {
    throw new OAuthError(400, 'invalid_grant', 'Invalid refresh token')
  }
}
