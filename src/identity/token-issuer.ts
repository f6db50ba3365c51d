import { randomUUID } from 'node:crypto'
import type { JWT } from '@fastify/jwt'
import type { SigningKey } from './signing-keys.js'

import { ACCESS_TOKEN_TTL_SECONDS } from './token-lifetimes.js'

export interface TokenSubject {
  subject: string
  email: string
  firstName: string
  lastName: string
  roles: string[]
  groupPath: string
  /** A patient's own account: its patient record's id, the patient every token of it is kept to. */
  patient?: string
  /** SMART's `fhirUser`: the FHIR resource the user is (`Patient/12`, `Practitioner/3`), when one is. */
  fhirUser?: string
}

export interface IssueOptions {
  lifetimeSeconds?: number
  /** The client the token was requested by (`azp`); this API's own client unless a confidential client asked. */
  requestedBy?: string
  /** SMART on FHIR scopes granted besides `openid profile email`, and the launch patient. */
  smart?: { scopes: string[]; patient?: string }
}

/**
 * Signs access tokens shaped like a Keycloak realm's, so a client written for Keycloak reads them
 * unchanged. `aud` is always this API's client id. The key is whatever the key store holds now, so
 * a rotation takes effect without a restart.
 */
export function createTokenIssuer(
  jwt: JWT,
  options: { issuer: string; clientId: string; signingKey: () => SigningKey },
) {
  return {
    issueAccessToken(user: TokenSubject, sessionId: string, issue: IssueOptions = {}): string {
      const { lifetimeSeconds = ACCESS_TOKEN_TTL_SECONDS, requestedBy = options.clientId, smart } = issue
      const key = options.signingKey()
      const now = Math.floor(Date.now() / 1000)
      const claims = {
        iss: options.issuer,
        aud: options.clientId,
        azp: requestedBy,
        sub: user.subject,
        typ: 'Bearer',
        jti: randomUUID(),
        iat: now,
        exp: now + lifetimeSeconds,
        session_state: sessionId,
        sid: sessionId,
        acr: '1',
        scope: ['openid', 'profile', 'email', ...(smart?.scopes ?? [])].join(' '),
        // A patient's own account is always kept to its record, whatever launch was asked for.
        ...(user.patient ? { patient: user.patient } : smart?.patient ? { patient: smart.patient } : {}),
        ...(user.fhirUser ? { fhirUser: user.fhirUser } : {}),
        realm_access: { roles: user.roles },
        resource_access: { [requestedBy]: { roles: user.roles } },
        email_verified: true,
        name: `${user.firstName} ${user.lastName}`,
        preferred_username: user.email,
        given_name: user.firstName,
        family_name: user.lastName,
        email: user.email,
        groups: [user.groupPath],
      }
      return jwt.sign(claims, { key: key.privateKey, kid: key.kid, algorithm: 'RS256' })
    },

    /**
     * An OpenID Connect ID token for the app `audience` (OIDC Core §2): who signed in, with SMART's
     * `fhirUser`, the authorization request's `nonce`, and the name claims when `profile` was granted.
     */
    issueIdToken(user: TokenSubject, sessionId: string, idToken: IdTokenOptions): string {
      const key = options.signingKey()
      const now = Math.floor(Date.now() / 1000)
      const claims = {
        iss: options.issuer,
        sub: user.subject,
        aud: idToken.audience,
        azp: idToken.audience,
        iat: now,
        exp: now + ACCESS_TOKEN_TTL_SECONDS,
        auth_time: idToken.authTime,
        sid: sessionId,
        ...(idToken.nonce === undefined ? {} : { nonce: idToken.nonce }),
        ...(idToken.fhirUser === undefined ? {} : { fhirUser: idToken.fhirUser }),
        ...(idToken.profile
          ? {
              name: `${user.firstName} ${user.lastName}`,
              given_name: user.firstName,
              family_name: user.lastName,
              preferred_username: user.email,
              email: user.email,
              email_verified: true,
            }
          : {}),
      }
      return jwt.sign(claims, { key: key.privateKey, kid: key.kid, algorithm: 'RS256' })
    },
  }
}

export interface IdTokenOptions {
  /** The app's client id. */
  audience: string
  /** When the user signed in (epoch seconds). */
  authTime: number
  nonce?: string
  /** `Practitioner/{id}` or `Patient/{id}`: the user's own record. */
  fhirUser?: string
  profile: boolean
}

export type TokenIssuer = ReturnType<typeof createTokenIssuer>
