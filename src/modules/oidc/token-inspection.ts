import { sql } from 'kysely'
import type { Db } from '../../../db/database.js'
import type { AccessTokenClaims } from '../../../schemas/auth.js'
import type { Introspection, UserInfo } from '../../../schemas/oidc.js'
import { AppError } from '../../errors.js'
import { findFhirUser } from '../../identity/account-queries.js'
import type { Principal } from '../../identity/principal.js'
import {
  findRefreshTokenSession,
  hashToken,
  revokeSession,
  revokeTokenSession,
  sessionIsLive,
} from '../../identity/sessions.js'
import {
  type AssertionSettings,
  type Client,
  type ClientCredentials,
  identifyClient,
  OAuthError,
} from './service.js'

/** How a caller of introspection or revocation authenticates: as at the token endpoint. */
export interface CallingClient {
  credentials: ClientCredentials
  assertions: AssertionSettings
}

/** Checks an access token as API requests are checked; throws an AppError for one that is refused. */
export type VerifyAccessToken = (
  token: string,
) => Promise<{ claims: AccessTokenClaims; principal: Principal }>

// Why a session was ended by the revocation endpoint (sessions.revoked_reason).
const REVOKED = 'REVOKED'
const BASE_SCOPES = ['openid', 'profile', 'email']
const INACTIVE: Introspection = { active: false }

// The embedded issuer's access tokens are JWTs; its refresh tokens are opaque base64url, without dots.
const isJwt = (token: string) => token.split('.').length === 3

/** The verified claims and principal of an access token, or undefined when it would be refused. */
async function verified(verify: VerifyAccessToken, token: string) {
  try {
    return await verify(token)
  } catch (error) {
    // Refusals only: a failing database is not an inactive token.
    if (error instanceof AppError && error.status < 500) return undefined
    throw error
  }
}

const sessionEnded = async (db: Db, sessionId: string | undefined) =>
  sessionId !== undefined &&
  (await db
    .selectFrom('sessions')
    .select('id')
    .where('id', '=', sessionId)
    .where('revoked_at', 'is not', null)
    .executeTakeFirst()) !== undefined

/**
 * The organization of a calling confidential client: a registered SMART app's, or an integration
 * client's through its service account. Undefined for a public client.
 */
async function organizationOf(db: Db, client: Client): Promise<number | undefined> {
  if (client.app) return client.app.confidential ? client.app.organization_id : undefined
  if (client.serviceUserId === undefined) return undefined
  const user = await db
    .selectFrom('users')
    .select('organization_id')
    .where('id', '=', client.serviceUserId)
    .where('active', '=', true)
    .executeTakeFirst()
  return user?.organization_id
}

async function introspectAccessToken(
  db: Db,
  verify: VerifyAccessToken,
  token: string,
  organizationId: number,
): Promise<Introspection> {
  const found = await verified(verify, token)
  if (!found || found.principal.organizationId !== organizationId) return INACTIVE
  const { claims, principal } = found
  // The revocations every instance polls may not have reached this one yet: ask the database.
  if (await sessionEnded(db, claims.sid)) return INACTIVE
  const fhirUser = (claims as { fhirUser?: unknown }).fhirUser
  return {
    active: true,
    token_type: 'Bearer',
    scope: claims.scope ?? BASE_SCOPES.join(' '),
    client_id: principal.clientId,
    username: principal.email,
    sub: claims.sub,
    exp: claims.exp,
    iat: claims.iat,
    iss: claims.iss,
    ...(claims.aud !== undefined ? { aud: claims.aud } : {}),
    ...(claims.sid ? { sid: claims.sid } : {}),
    ...(claims.patient ? { patient: claims.patient } : {}),
    ...(typeof fhirUser === 'string'
      ? { fhirUser }
      : await findFhirUser(db, principal.userId).then((user) => (user ? { fhirUser: user } : {}))),
  }
}

async function introspectRefreshToken(db: Db, token: string, organizationId: number): Promise<Introspection> {
  const row = await db
    .selectFrom('refresh_tokens')
    .innerJoin('sessions', 'sessions.id', 'refresh_tokens.session_id')
    .innerJoin('users', 'users.id', 'sessions.user_id')
    .select([
      'refresh_tokens.expires_at',
      'refresh_tokens.created_at',
      'sessions.id',
      'sessions.client_id',
      'sessions.scopes',
      'sessions.launch_patient_id',
      'users.subject',
      'users.email',
    ])
    .where('refresh_tokens.token_hash', '=', hashToken(token))
    .where('users.organization_id', '=', organizationId)
    .where('refresh_tokens.rotated_at', 'is', null)
    .where('refresh_tokens.expires_at', '>', sql<Date>`now()`)
    // Active exactly when a refresh would take it.
    .where(sessionIsLive)
    .executeTakeFirst()
  if (!row) return INACTIVE
  const seconds = (date: Date) => Math.floor(date.getTime() / 1000)
  return {
    active: true,
    token_type: 'refresh_token',
    scope: [...BASE_SCOPES, ...row.scopes].join(' '),
    client_id: row.client_id,
    username: row.email,
    sub: row.subject,
    exp: seconds(row.expires_at),
    iat: seconds(row.created_at),
    sid: row.id,
    ...(row.launch_patient_id !== null ? { patient: String(row.launch_patient_id) } : {}),
  }
}

/**
 * RFC 7662 introspection for a confidential client: whether a token of the embedded issuer is
 * active, and what it says. Only tokens of the caller's own organization are reported active: a
 * client sees nothing of another practice's users, not even that a token of theirs is valid.
 */
export async function introspect(
  db: Db,
  publicClientId: string,
  { credentials, assertions }: CallingClient,
  token: string,
  verify: VerifyAccessToken,
): Promise<Introspection> {
  const caller = await identifyClient(db, publicClientId, credentials, assertions)
  const organizationId = await organizationOf(db, caller)
  if (organizationId === undefined) {
    throw new OAuthError(401, 'invalid_client', 'Only a confidential client may introspect tokens')
  }
  // The token's own shape says which kind it is, so the hint is not needed (RFC 7662 §2.1 lets it go unused).
  return isJwt(token)
    ? introspectAccessToken(db, verify, token, organizationId)
    : introspectRefreshToken(db, token, organizationId)
}

const notTheClients = () =>
  new OAuthError(400, 'unauthorized_client', 'The token was not issued to this client')

/**
 * RFC 7009 revocation: ends the session of a refresh token or of an access token (its `sid`), so
 * that the session's refresh token is refused and its access tokens stop working as a signed-out
 * session's do. An unknown, invalid or expired token is no error (§2.2); a token issued to another
 * client is refused with unauthorized_client and nothing is revoked (§2.1).
 */
export async function revoke(
  db: Db,
  publicClientId: string,
  { credentials, assertions }: CallingClient,
  token: string,
  verify: VerifyAccessToken,
): Promise<void> {
  const client = await identifyClient(db, publicClientId, credentials, assertions)
  if (!isJwt(token)) {
    const session = await findRefreshTokenSession(db, token)
    if (!session) return
    if (session.client_id !== client.clientId) throw notTheClients()
    await revokeSession(db, session.id, REVOKED)
    return
  }
  const found = await verified(verify, token)
  const sessionId = found?.claims.sid
  if (!found || !sessionId) return
  const { claims, principal } = found
  if (principal.clientId !== client.clientId) throw notTheClients()
  const owner = { userId: principal.userId, clientId: principal.clientId }
  await revokeTokenSession(db, { sessionId, ...owner, expiresAt: new Date(claims.exp * 1000) }, REVOKED)
}

/** OpenID Connect UserInfo (Core §5.3): who the token's user is, and SMART's fhirUser. */
export async function userInfo(db: Db, principal: Principal): Promise<UserInfo> {
  const fhirUser = await findFhirUser(db, principal.userId)
  return {
    sub: principal.subject,
    name: `${principal.firstName} ${principal.lastName}`,
    given_name: principal.firstName,
    family_name: principal.lastName,
    preferred_username: principal.email,
    email: principal.email,
    email_verified: true,
    ...(fhirUser ? { fhirUser } : {}),
  }
}
