import { createHash, randomBytes, randomUUID } from 'node:crypto'
import { type ExpressionBuilder, sql } from 'kysely'
import { type Database, type Db, inTransaction, type Trx } from '../../db/database.js'
import { AppError } from '../errors.js'
import { findTokenSubject } from './account-queries.js'
import type { TokenIssuer } from './token-issuer.js'
import { ACCESS_TOKEN_TTL_SECONDS, REFRESH_TOKEN_TTL_SECONDS } from './token-lifetimes.js'

// A session can be refreshed for at most this long after sign-in, however often it is refreshed.
const SESSION_MAX_SECONDS = 30 * 24 * 3600

export interface SessionTokens {
  accessToken: string
  refreshToken: string
  expiresIn: number
  refreshExpiresIn: number
  sessionId: string
  /** The client the session is for. */
  clientId: string
  /** Scopes granted with the session besides openid, profile and email. */
  scopes: string[]
  /** A SMART app's launch context, in every token of its session. */
  launch?: LaunchContext
}

/** The SMART launch context of an app's session: the patient and, with it, the encounter. */
interface LaunchContext {
  patientId: number
  encounterId?: number
}

/** What opens a SMART app's session besides its user and client (the authorization code's grant). */
export interface AppSession {
  appGrantId: number
  /** With online_access: the sign-in on the pages it was authorized in; the session ends with it. */
  browserSessionId?: string
  launch?: LaunchContext
}

export const hashToken = (token: string) => createHash('sha256').update(token).digest('base64url')
export const newOpaqueToken = () => randomBytes(32).toString('base64url')

export const invalidRefreshToken = () =>
  new AppError('AUTH_001', 'The refresh token is invalid, expired or revoked; sign in again', {
    status: 400,
    message: 'Invalid refresh token',
  })

async function addRefreshToken(trx: Trx, sessionId: string): Promise<string> {
  const token = newOpaqueToken()
  await trx
    .insertInto('refresh_tokens')
    .values({
      session_id: sessionId,
      token_hash: hashToken(token),
      expires_at: new Date(Date.now() + REFRESH_TOKEN_TTL_SECONDS * 1000),
      rotated_at: null,
    })
    .execute()
  return token
}

async function issueFor(
  db: Db,
  issuer: TokenIssuer,
  userId: number,
  sessionId: string,
  clientId: string,
  refreshToken: string,
  scopes: string[],
  launch?: LaunchContext,
): Promise<SessionTokens> {
  const subject = await findTokenSubject(db, userId)
  if (!subject) throw invalidRefreshToken()
  const patient = launch === undefined ? undefined : String(launch.patientId)
  return {
    accessToken: issuer.issueAccessToken(subject, sessionId, {
      requestedBy: clientId,
      smart: { scopes, patient },
    }),
    refreshToken,
    expiresIn: ACCESS_TOKEN_TTL_SECONDS,
    refreshExpiresIn: REFRESH_TOKEN_TTL_SECONDS,
    sessionId,
    clientId,
    scopes,
    ...(launch ? { launch } : {}),
  }
}

/**
 * Opens a session for an authenticated account: an access token and the first refresh token.
 * `scopes` (SMART's online_access, offline_access) are granted with it, for as long as it lasts.
 * Given a transaction, the session is part of it.
 */
export async function startSession(
  db: Db,
  issuer: TokenIssuer,
  userId: number,
  clientId: string,
  scopes: string[] = [],
  app?: AppSession,
): Promise<SessionTokens> {
  const sessionId = randomUUID()
  const refreshToken = await inTransaction(db, async (trx) => {
    await trx
      .insertInto('sessions')
      .values({
        id: sessionId,
        user_id: userId,
        client_id: clientId,
        scopes,
        expires_at: new Date(Date.now() + SESSION_MAX_SECONDS * 1000),
        revoked_at: null,
        revoked_reason: null,
        app_grant_id: app?.appGrantId ?? null,
        browser_session_id: app?.browserSessionId ?? null,
        launch_patient_id: app?.launch?.patientId ?? null,
        launch_encounter_id: app?.launch?.encounterId ?? null,
      })
      .execute()
    return addRefreshToken(trx, sessionId)
  })
  return issueFor(db, issuer, userId, sessionId, clientId, refreshToken, scopes, app?.launch)
}

/**
 * Whether a session (of the query's `sessions`) is live, as a refresh and an introspection of its
 * refresh token find it: not ended, within its longest life, its account active, and, for an
 * online_access session, the sign-in on the pages it was authorized in not ended or expired either.
 */
export const sessionIsLive = (eb: ExpressionBuilder<Database, 'sessions'>) =>
  eb.and([
    eb('sessions.revoked_at', 'is', null),
    eb('sessions.expires_at', '>', sql<Date>`now()`),
    eb.exists(
      eb
        .selectFrom('users')
        .select('users.id')
        .whereRef('users.id', '=', 'sessions.user_id')
        .where('users.active', '=', true),
    ),
    eb.or([
      eb('sessions.browser_session_id', 'is', null),
      eb.exists(
        eb
          .selectFrom('browser_sessions')
          .select('browser_sessions.id')
          .whereRef('browser_sessions.id', '=', 'sessions.browser_session_id')
          .where('browser_sessions.revoked_at', 'is', null)
          .where('browser_sessions.expires_at', '>', sql<Date>`now()`),
      ),
    ]),
  ])

/** Revokes, for `reason`, the sessions not revoked yet that the caller's WHERE picks. */
const revoking = (db: Db, reason: string) =>
  db
    .updateTable('sessions')
    .set({ revoked_at: sql`now()`, revoked_reason: reason })
    .where('revoked_at', 'is', null)

/** Ends a session by its id; nothing for one already ended. */
export function revokeSession(db: Db, sessionId: string, reason: string) {
  return revoking(db, reason).where('id', '=', sessionId).execute()
}

/** Where a refresh token leads: its session and whose it is; undefined for a token never issued. */
export function findRefreshTokenSession(db: Db, presented: string) {
  return db
    .selectFrom('refresh_tokens')
    .innerJoin('sessions', 'sessions.id', 'refresh_tokens.session_id')
    .select(['sessions.id', 'sessions.client_id'])
    .where('refresh_tokens.token_hash', '=', hashToken(presented))
    .executeTakeFirst()
}

/**
 * Ends the session an access token names (`sid`), so that its access tokens stop working as a
 * signed-out session's do. A client_credentials token's session has no row until then: it gets
 * one, already ended, that lasts as long as the token.
 */
export async function revokeTokenSession(
  db: Db,
  token: { sessionId: string; userId: number; clientId: string; expiresAt: Date },
  reason: string,
): Promise<void> {
  await db
    .insertInto('sessions')
    .values({
      id: token.sessionId,
      user_id: token.userId,
      client_id: token.clientId,
      expires_at: token.expiresAt,
      revoked_at: sql`now()`,
      revoked_reason: reason,
    })
    .onConflict((conflict) => conflict.column('id').doNothing())
    .execute()
  await revokeSession(db, token.sessionId, reason)
}

export function revokeUserSessions(db: Db, userId: number, reason: string) {
  return revoking(db, reason).where('user_id', '=', userId).execute()
}

type Rotation = {
  outcome: 'rotated'
  userId: number
  sessionId: string
  clientId: string
  scopes: string[]
  launch: LaunchContext | undefined
  refreshToken: string
}

const reuseListeners = new Set<() => void>()
type Refused = 'invalid' | 'reused'

/** Calls `listener` whenever a refresh token is presented again (the metrics count it); returns the unsubscribe. */
export function onRefreshTokenReuse(listener: () => void): () => void {
  reuseListeners.add(listener)
  return () => reuseListeners.delete(listener)
}

/**
 * Exchanges a refresh token for a new pair, if `mayRefresh` lets the caller refresh a session of
 * its client. Each refresh token works once: presenting one that was already exchanged means it was
 * copied, so the whole session is revoked (reuse detection). The revocation commits even though the
 * caller gets an error.
 */
export async function refreshSession(
  db: Db,
  issuer: TokenIssuer,
  presented: string,
  mayRefresh: (sessionClientId: string) => boolean = () => true,
): Promise<SessionTokens> {
  const hash = hashToken(presented)
  const result = await db.transaction().execute(async (trx): Promise<Rotation | { outcome: Refused }> => {
    const token = await trx
      .updateTable('refresh_tokens')
      .set({ rotated_at: sql`now()` })
      .where('token_hash', '=', hash)
      .where('rotated_at', 'is', null)
      .where('expires_at', '>', sql<Date>`now()`)
      .returning('session_id')
      .executeTakeFirst()
    if (!token) {
      const reused = await trx
        .selectFrom('refresh_tokens')
        .select('session_id')
        .where('token_hash', '=', hash)
        .where('rotated_at', 'is not', null)
        .executeTakeFirst()
      if (!reused) return { outcome: 'invalid' }
      await revokeSession(trx, reused.session_id, 'REFRESH_REUSE')
      return { outcome: 'reused' }
    }
    const session = await trx
      .selectFrom('sessions')
      .select([
        'sessions.user_id',
        'sessions.client_id',
        'sessions.scopes',
        'sessions.launch_patient_id',
        'sessions.launch_encounter_id',
      ])
      .where('sessions.id', '=', token.session_id)
      .where(sessionIsLive)
      .executeTakeFirst()
    if (!session || !mayRefresh(session.client_id)) return { outcome: 'invalid' }
    const { launch_patient_id: patientId, launch_encounter_id: encounterId } = session
    return {
      outcome: 'rotated',
      userId: session.user_id,
      sessionId: token.session_id,
      clientId: session.client_id,
      scopes: session.scopes,
      launch:
        patientId === null ? undefined : { patientId, ...(encounterId === null ? {} : { encounterId }) },
      refreshToken: await addRefreshToken(trx, token.session_id),
    }
  })
  if (result.outcome === 'reused') for (const listener of reuseListeners) listener()
  if (result.outcome !== 'rotated') throw invalidRefreshToken()
  const { userId, sessionId, clientId: client, refreshToken, scopes, launch } = result
  return issueFor(db, issuer, userId, sessionId, client, refreshToken, scopes, launch)
}

/** The client and scopes of the live session a refresh token belongs to, if any. */
export async function sessionOfRefreshToken(
  db: Db,
  presented: string,
): Promise<{ clientId: string; scopes: string[] } | undefined> {
  return db
    .selectFrom('refresh_tokens')
    .innerJoin('sessions', 'sessions.id', 'refresh_tokens.session_id')
    .select(['sessions.client_id as clientId', 'sessions.scopes'])
    .where('refresh_tokens.token_hash', '=', hashToken(presented))
    .where('sessions.revoked_at', 'is', null)
    .executeTakeFirst()
}

/**
 * Ends the session a refresh token belongs to; returns false when the token is unknown (or, when a
 * client is named, belongs to another client's session).
 */
export async function endSession(db: Db, presented: string, clientId?: string): Promise<boolean> {
  let query = db
    .selectFrom('refresh_tokens')
    .innerJoin('sessions', 'sessions.id', 'refresh_tokens.session_id')
    .select('refresh_tokens.session_id')
    .where('refresh_tokens.token_hash', '=', hashToken(presented))
  if (clientId !== undefined) query = query.where('sessions.client_id', '=', clientId)
  const token = await query.executeTakeFirst()
  if (!token) return false
  await revokeSession(db, token.session_id, 'LOGOUT')
  return true
}
