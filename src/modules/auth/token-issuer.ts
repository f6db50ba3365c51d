import { randomUUID } from 'node:crypto'
import type { JWT } from '@fastify/jwt'

/** Lifetimes fixed by the API specification. */
export const ACCESS_TOKEN_TTL_SECONDS = 3600
export const REFRESH_TOKEN_TTL_SECONDS = 86_400

export interface TokenSubject {
  subject: string
  email: string
  firstName: string
  lastName: string
  roles: string[]
  groupPath: string
}

/**
 * Signs access tokens shaped like a Keycloak realm's, so a client written for Keycloak reads them
 * unchanged. The signing key and `kid` are set where @fastify/jwt is registered.
 */
export function createTokenIssuer(jwt: JWT, options: { issuer: string; clientId: string }) {
  return {
    issueAccessToken(
      user: TokenSubject,
      sessionId: string,
      lifetimeSeconds = ACCESS_TOKEN_TTL_SECONDS,
    ): string {
      const now = Math.floor(Date.now() / 1000)
      return jwt.sign({
        iss: options.issuer,
        aud: options.clientId,
        azp: options.clientId,
        sub: user.subject,
        typ: 'Bearer',
        jti: randomUUID(),
        iat: now,
        exp: now + lifetimeSeconds,
        session_state: sessionId,
        sid: sessionId,
        acr: '1',
        scope: 'openid profile email',
        realm_access: { roles: user.roles },
        resource_access: { [options.clientId]: { roles: user.roles } },
        email_verified: true,
        name: `${user.firstName} ${user.lastName}`,
        preferred_username: user.email,
        given_name: user.firstName,
        family_name: user.lastName,
        email: user.email,
        groups: [user.groupPath],
      })
    },
  }
}

export type TokenIssuer = ReturnType<typeof createTokenIssuer>
