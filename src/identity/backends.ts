import type { Db } from '../../db/database.js'
import type { AccessTokenClaims, LoginResult } from '../../schemas/auth.js'
import { isRole } from '../access/roles.js'
import { AppError } from '../errors.js'
import { type ProviderClient, ProviderRejection, type ProviderTokens } from './external-provider.js'
import { invalidCredentials, login } from './login.js'
import type { Principal } from './principal.js'
import { endSession, invalidRefreshToken, refreshSession } from './sessions.js'
import type { TokenIssuer } from './token-issuer.js'

export interface IssuedTokens {
  accessToken: string
  refreshToken: string
  expiresIn: number
}

export type SignInResult =
  | ({ kind: 'signed-in'; user: LoginResult['user'] } & IssuedTokens)
  | { kind: 'password-change-required' }

/**
 * What /api/auth/* does, whoever issues the tokens: the service itself (embedded) or an external
 * OpenID provider it forwards to. The routes do not know which.
 */
export interface AuthBackend {
  passwordLogin(username: string, password: string): Promise<SignInResult>
  codeLogin(code: string, redirectUri: string, codeVerifier?: string): Promise<SignInResult>
  refresh(refreshToken: string): Promise<IssuedTokens>
  logout(refreshToken: string): Promise<void>
}

const noExternalProvider = () =>
  new AppError('VAL_001', 'No external identity provider is configured (OIDC_ISSUER_URL)', { status: 400 })

export function embeddedBackend(db: Db, issuer: TokenIssuer, clientId: string): AuthBackend {
  return {
    async passwordLogin(username, password) {
      const outcome = await login(db, issuer, { username, password }, clientId)
      if (outcome.kind === 'password-change-required') return outcome
      const { accessToken, refreshToken, expiresIn } = outcome.tokens
      return { kind: 'signed-in', accessToken, refreshToken, expiresIn, user: outcome.user }
    },
    codeLogin: async () => {
      throw noExternalProvider()
    },
    refresh: (refreshToken) => refreshSession(db, issuer, refreshToken),
    async logout(refreshToken) {
      await endSession(db, refreshToken)
    },
  }
}

function issued(tokens: ProviderTokens): IssuedTokens {
  if (!tokens.refresh_token) {
    throw new AppError('SYS_001', 'The identity provider issued no refresh token', { status: 503 })
  }
  return {
    accessToken: tokens.access_token,
    refreshToken: tokens.refresh_token,
    expiresIn: tokens.expires_in,
  }
}

function claimsOf(token: string): AccessTokenClaims {
  try {
    return JSON.parse(
      Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8'),
    ) as AccessTokenClaims
  } catch {
    throw new AppError('SYS_001', 'The identity provider issued an access token that is not a JWT', {
      status: 503,
    })
  }
}

/**
 * Forwards to the external provider. The claims of a token just received from the provider's own
 * token endpoint are read without re-verifying its signature: it came over our own connection to
 * the configured issuer, which is what OpenID Connect accepts for tokens obtained this way.
 */
export function externalBackend(
  provider: ProviderClient,
  principalFromClaims: (claims: AccessTokenClaims) => Promise<Principal>,
): AuthBackend {
  async function signIn(
    obtain: () => Promise<ProviderTokens>,
    rejected: () => AppError,
  ): Promise<SignInResult> {
    let tokens: ProviderTokens
    try {
      tokens = await obtain()
    } catch (error) {
      throw error instanceof ProviderRejection ? rejected() : error
    }
    const principal = await principalFromClaims(claimsOf(tokens.access_token))
    return {
      kind: 'signed-in',
      ...issued(tokens),
      user: {
        id: principal.userId,
        email: principal.email,
        firstName: principal.firstName,
        lastName: principal.lastName,
        role: principal.roles.find(isRole) ?? 'USER',
      },
    }
  }

  return {
    passwordLogin: (username, password) =>
      signIn(() => provider.passwordGrant(username, password), invalidCredentials),
    codeLogin: (code, redirectUri, codeVerifier) =>
      signIn(
        () => provider.exchangeCode(code, redirectUri, codeVerifier),
        () =>
          new AppError('AUTH_001', 'The authorization code is invalid, expired or already used', {
            status: 400,
          }),
      ),
    async refresh(refreshToken) {
      try {
        return issued(await provider.refresh(refreshToken))
      } catch (error) {
        throw error instanceof ProviderRejection ? invalidRefreshToken() : error
      }
    },
    logout: (refreshToken) => provider.endSession(refreshToken),
  }
}
