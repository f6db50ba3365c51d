import { createHash } from 'node:crypto'
import { sql } from 'kysely'
import type { Db, Trx } from '../../../db/database.js'
import { hashToken, newOpaqueToken } from '../../identity/sessions.js'

// Authorization codes (RFC 6749 §4.1.2): single use, short-lived, bound to the app, its redirect
// URI, the user, what was granted and the PKCE challenge. Stored as SHA-256 hashes only.

/** How long a code may wait for its exchange. */
const CODE_LIFETIME_SECONDS = 60

export interface CodeGrant {
  organizationId: number
  appId: number
  userId: number
  appGrantId: number
  browserSessionId: string
  redirectUri: string
  scopes: string[]
  codeChallenge: string
  nonce: string | undefined
  patientId: number | undefined
  encounterId: number | undefined
  needPatientBanner: boolean
}

export async function issueCode(db: Db, grant: CodeGrant): Promise<string> {
  const code = newOpaqueToken()
  await db
    .insertInto('authorization_codes')
    .values({
      code_hash: hashToken(code),
      organization_id: grant.organizationId,
      app_id: grant.appId,
      user_id: grant.userId,
      app_grant_id: grant.appGrantId,
      browser_session_id: grant.browserSessionId,
      redirect_uri: grant.redirectUri,
      scopes: grant.scopes,
      code_challenge: grant.codeChallenge,
      nonce: grant.nonce ?? null,
      patient_id: grant.patientId ?? null,
      encounter_id: grant.encounterId ?? null,
      need_patient_banner: grant.needPatientBanner,
      expires_at: new Date(Date.now() + CODE_LIFETIME_SECONDS * 1000),
      used_at: null,
      session_id: null,
    })
    .execute()
  return code
}

/** What an exchange presents: the code, the redirect URI it was asked for, and the PKCE verifier. */
export interface CodeExchange {
  code: string
  appId: number
  redirectUri: string
  codeVerifier: string
}

export type RedeemedCode = CodeGrant & { codeHash: string; authTime: Date }

/** Why a code is refused; `reused` ended the session its first exchange opened. */
export type CodeRefusal = 'invalid' | 'reused'

const s256 = (verifier: string) => createHash('sha256').update(verifier).digest('base64url')

// RFC 7636 §4.1: 43 to 128 unreserved characters.
const VERIFIER = /^[A-Za-z0-9._~-]{43,128}$/

/**
 * Uses the code once: its grant, if it is unexpired, of this app, asked for this redirect URI, and
 * the verifier hashes to its challenge (else 'invalid', and the code is spent all the same). A code
 * used before is 'reused': whatever its first exchange issued is revoked (RFC 6749 §4.1.2). The
 * code's row stays locked until `trx` ends, so a concurrent use waits for the session this one
 * opens (recordCodeSession) and then revokes it.
 */
export async function redeemCode(trx: Trx, exchange: CodeExchange): Promise<RedeemedCode | CodeRefusal> {
  const codeHash = hashToken(exchange.code)
  const row = await trx
    .updateTable('authorization_codes')
    .set({ used_at: sql`now()` })
    .where('code_hash', '=', codeHash)
    .where('used_at', 'is', null)
    .returningAll()
    .executeTakeFirst()
  if (!row) {
    const used = await trx
      .selectFrom('authorization_codes')
      .select(['session_id'])
      .where('code_hash', '=', codeHash)
      .executeTakeFirst()
    if (!used) return 'invalid'
    if (used.session_id !== null) {
      await trx
        .updateTable('sessions')
        .set({ revoked_at: sql`now()`, revoked_reason: 'CODE_REUSE' })
        .where('id', '=', used.session_id)
        .where('revoked_at', 'is', null)
        .execute()
    }
    return 'reused'
  }
  const valid =
    row.expires_at.getTime() > Date.now() &&
    row.app_id === exchange.appId &&
    row.redirect_uri === exchange.redirectUri &&
    VERIFIER.test(exchange.codeVerifier) &&
    s256(exchange.codeVerifier) === row.code_challenge
  if (!valid) return 'invalid'
  const signIn = await trx
    .selectFrom('browser_sessions')
    .select('created_at')
    .where('id', '=', row.browser_session_id as string)
    .executeTakeFirst()
  return {
    codeHash,
    organizationId: row.organization_id,
    appId: row.app_id,
    userId: row.user_id,
    appGrantId: row.app_grant_id,
    browserSessionId: row.browser_session_id as string,
    redirectUri: row.redirect_uri,
    scopes: row.scopes,
    codeChallenge: row.code_challenge,
    nonce: row.nonce ?? undefined,
    patientId: row.patient_id ?? undefined,
    encounterId: row.encounter_id ?? undefined,
    needPatientBanner: row.need_patient_banner,
    authTime: signIn?.created_at ?? row.created_at,
  }
}

/** Records the session the code's exchange opened, so that a reuse of the code can end it. */
export async function recordCodeSession(trx: Trx, codeHash: string, sessionId: string): Promise<void> {
  await trx
    .updateTable('authorization_codes')
    .set({ session_id: sessionId })
    .where('code_hash', '=', codeHash)
    .execute()
}
