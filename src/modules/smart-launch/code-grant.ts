import type { Db } from '../../../db/database.js'
import type { TokenRequest, TokenSet } from '../../../schemas/oidc.js'
import { findTokenSubject } from '../../identity/account-queries.js'
import { type SessionTokens, startSession } from '../../identity/sessions.js'
import type { TokenIssuer, TokenSubject } from '../../identity/token-issuer.js'
import {
  type CodeExchange,
  type CodeRefusal,
  type RedeemedCode,
  recordCodeSession,
  redeemCode,
} from './authorization-codes.js'
import type { SmartApp } from './authorization-request.js'
import { auditLaunchStep } from './launch-audit.js'

/** A refusal of the token endpoint, in OAuth's terms. */
export interface TokenRefusal {
  status: number
  error: string
  description: string
}

const REFRESH_SCOPES = ['online_access', 'offline_access']

/**
 * The token set of an app's session: its scope exactly what was granted, a refresh token only with
 * online_access or offline_access, and SMART's launch context.
 */
export function appTokenSet(
  tokens: SessionTokens,
  extra: { idToken?: string; needPatientBanner?: boolean } = {},
): TokenSet {
  const refreshable = tokens.scopes.some((scope) => REFRESH_SCOPES.includes(scope))
  return {
    access_token: tokens.accessToken,
    expires_in: tokens.expiresIn,
    refresh_expires_in: refreshable ? tokens.refreshExpiresIn : 0,
    ...(refreshable ? { refresh_token: tokens.refreshToken } : {}),
    token_type: 'Bearer',
    'not-before-policy': 0,
    session_state: tokens.sessionId,
    scope: tokens.scopes.join(' '),
    ...(extra.idToken ? { id_token: extra.idToken } : {}),
    ...(tokens.launch
      ? {
          patient: String(tokens.launch.patientId),
          ...(tokens.launch.encounterId === undefined
            ? {}
            : { encounter: String(tokens.launch.encounterId) }),
        }
      : {}),
    ...(extra.needPatientBanner === undefined ? {} : { need_patient_banner: extra.needPatientBanner }),
  }
}

type Exchange =
  | { outcome: CodeRefusal | 'withdrawn' }
  | { outcome: 'issued'; redeemed: RedeemedCode; subject: TokenSubject; tokens: SessionTokens }

/**
 * Uses the code and opens its session in one transaction, which holds the code's row from its use
 * to the record of the session it opened: a second exchange of the code, even one sent at the same
 * moment, waits for the first to finish and then finds the session to revoke (RFC 6749 §4.1.2).
 */
function exchangeCode(db: Db, issuer: TokenIssuer, app: SmartApp, exchange: CodeExchange): Promise<Exchange> {
  return db.transaction().execute(async (trx): Promise<Exchange> => {
    const redeemed = await redeemCode(trx, exchange)
    if (typeof redeemed === 'string') return { outcome: redeemed }
    const grantStanding = await trx
      .selectFrom('app_grants')
      .select('id')
      .where('id', '=', redeemed.appGrantId)
      .where('revoked_at', 'is', null)
      .executeTakeFirst()
    const subject = grantStanding && (await findTokenSubject(trx, redeemed.userId))
    if (!subject) return { outcome: 'withdrawn' }
    const { scopes } = redeemed
    // With online_access (and not offline_access) the session ends with the sign-in it came from.
    const online = scopes.includes('online_access') && !scopes.includes('offline_access')
    const tokens = await startSession(trx, issuer, redeemed.userId, app.client_id, scopes, {
      appGrantId: redeemed.appGrantId,
      ...(online ? { browserSessionId: redeemed.browserSessionId } : {}),
      ...(redeemed.patientId === undefined
        ? {}
        : {
            launch: {
              patientId: redeemed.patientId,
              ...(redeemed.encounterId === undefined ? {} : { encounterId: redeemed.encounterId }),
            },
          }),
    })
    await recordCodeSession(trx, redeemed.codeHash, tokens.sessionId)
    return { outcome: 'issued', redeemed, subject, tokens }
  })
}

/**
 * The authorization_code grant (RFC 6749 §4.1.3 with PKCE, RFC 7636) for an authenticated app: the
 * code's session, with an ID token when `openid` was granted. The exchange is audited.
 */
export async function authorizationCodeGrant(
  db: Db,
  issuer: TokenIssuer,
  app: SmartApp,
  request: TokenRequest,
  requestId: string,
): Promise<TokenSet | TokenRefusal> {
  const { code, redirect_uri: redirectUri, code_verifier: codeVerifier } = request
  if (!code || !redirectUri || !codeVerifier) {
    return {
      status: 400,
      error: 'invalid_request',
      description: 'code, redirect_uri and code_verifier are required',
    }
  }
  const exchanged = await exchangeCode(db, issuer, app, { code, appId: app.id, redirectUri, codeVerifier })
  if (exchanged.outcome === 'withdrawn') {
    return {
      status: 400,
      error: 'invalid_grant',
      description: 'The grant was revoked or the account deactivated',
    }
  }
  if (exchanged.outcome !== 'issued') {
    await auditLaunchStep(db, {
      organizationId: app.organization_id,
      userId: null,
      action: 'EXCHANGE',
      resourceType: 'smart-app',
      ids: [app.id],
      status: 400,
      requestId,
    })
    return {
      status: 400,
      error: 'invalid_grant',
      description:
        exchanged.outcome === 'reused'
          ? 'The code was used before; what it issued is revoked'
          : 'The code is invalid or expired, or the redirect_uri or code_verifier does not match',
    }
  }
  const { redeemed, subject, tokens } = exchanged
  const { scopes } = redeemed
  const idToken = scopes.includes('openid')
    ? issuer.issueIdToken(subject, tokens.sessionId, {
        audience: app.client_id,
        authTime: Math.floor(redeemed.authTime.getTime() / 1000),
        nonce: redeemed.nonce,
        fhirUser: scopes.includes('fhirUser') ? subject.fhirUser : undefined,
        profile: scopes.includes('profile'),
      })
    : undefined
  await auditLaunchStep(db, {
    organizationId: redeemed.organizationId,
    userId: redeemed.userId,
    action: 'EXCHANGE',
    resourceType: 'smart-app',
    ids: [app.id],
    patientId: redeemed.patientId ?? null,
    status: 200,
    requestId,
  })
  return appTokenSet(tokens, {
    ...(idToken ? { idToken } : {}),
    needPatientBanner: redeemed.patientId === undefined ? undefined : redeemed.needPatientBanner,
  })
}
