import fastifyJwt, { type VerifyOptions } from '@fastify/jwt'
import type { FastifyPluginAsync, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { AccessTokenClaims } from '../../schemas/auth.js'
import type { EncryptionSettings } from '../config/encryption.js'
import type { IdentitySettings } from '../config/identity.js'
import { AppError } from '../errors.js'
import { bearerTokenOf } from '../http/request-principal.js'
import { type AuthBackend, embeddedBackend, externalBackend } from '../identity/backends.js'
import {
  createProviderClient,
  discoverProvider,
  type ProviderClient,
  type ProviderMetadata,
} from '../identity/external-provider.js'
import { embeddedKeyResolver, jwksKeyResolver, type KeyResolver } from '../identity/key-resolver.js'
import { ACCOUNT_CACHE_TTL_MS, createPrincipalResolver, type Principal } from '../identity/principal.js'
import { RevokedSessions } from '../identity/revoked-sessions.js'
import {
  ensureSigningKey,
  loadVerificationKeys,
  SIGNING_KEY_REFRESH_MS,
  type SigningKey,
} from '../identity/signing-keys.js'
import { refusedClaims, type TokenClaimRules } from '../identity/token-claims.js'
import { createTokenIssuer, type TokenIssuer } from '../identity/token-issuer.js'
import { ACCESS_TOKEN_TTL_SECONDS } from '../identity/token-lifetimes.js'
import { loadSecretBox } from '../lib/secret-box.js'
import type { TokenRejection } from '../lib/service-metrics.js'
import { TtlCache } from '../lib/ttl-cache.js'

declare module '@fastify/jwt' {
  interface FastifyJWT {
    user: AccessTokenClaims
  }
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Verifies the bearer token and sets `request.principal`; throws a 401/403 AppError. */
    authenticate(request: FastifyRequest): Promise<Principal>
    /**
     * Checks a token handed over otherwise than in the request's Authorization header (token
     * introspection, revocation) as `authenticate` checks one, without making it the request's
     * principal; throws the AppError `authenticate` would.
     */
    verifyAccessToken(
      request: FastifyRequest,
      token: string,
    ): Promise<{ claims: AccessTokenClaims; principal: Principal }>
    /** Present when the service is its own token issuer (no OIDC_ISSUER_URL). */
    tokenIssuer: TokenIssuer | undefined
    /** Sign-in, refresh and logout, by the embedded issuer or through the external provider. */
    authBackend: AuthBackend
    /** The external provider's discovery document, read at start (OIDC_ISSUER_URL only). */
    identityProvider: ProviderMetadata | undefined
  }
  interface FastifyRequest {
    principal: Principal | null
  }
}

const KNOWN_TOKENS_MAX = 10_000
// The end of a signed token is its signature's: 32 base64url characters are 192 bits of it.
const tokenKey = (token: string) => token.slice(-32)
// How often revocations made on any instance are read: a revoked session's tokens stop working
// within this (plus a request's time), documented as 5 s.
const REVOCATION_POLL_MS = 2000

/** Why a token was refused, for the metrics: a short fixed list, never the token or its claims. */
function rejectionReason(error: unknown): TokenRejection {
  const code = (error as { code?: string }).code
  if (code === 'FST_JWT_NO_AUTHORIZATION_IN_HEADER') return 'missing'
  if (code === 'FST_JWT_BAD_REQUEST' || code === 'FST_JWT_AUTHORIZATION_TOKEN_INVALID') return 'malformed'
  if (code === 'FST_JWT_AUTHORIZATION_TOKEN_EXPIRED') return 'expired'
  if (error instanceof AppError) return error.code === 'AUTH_003' ? 'organization' : 'account'
  return 'invalid'
}

function fromJwtError(error: unknown): AppError {
  if (error instanceof AppError) return error
  const code = (error as { code?: string }).code
  if (code === 'FST_JWT_AUTHORIZATION_TOKEN_EXPIRED')
    return new AppError('AUTH_002', 'The access token has expired')
  if (code === 'FST_JWT_NO_AUTHORIZATION_IN_HEADER') {
    return new AppError('AUTH_001', 'An Authorization: Bearer <token> header is required')
  }
  if (code === 'FST_JWT_BAD_REQUEST')
    return new AppError('AUTH_001', 'The Authorization header must be Bearer <token>')
  return new AppError('AUTH_001', 'The access token is invalid')
}

const auth: FastifyPluginAsync<{ identity: IdentitySettings; encryption: EncryptionSettings }> = async (
  app,
  { identity, encryption },
) => {
  let resolveKey: KeyResolver
  let signingKey: SigningKey | undefined
  let provider: ProviderClient | undefined
  let metadata: ProviderMetadata | undefined
  if (identity.embeddedIssuer) {
    // Its own box from the config (this plugin comes before `encryption`): same key, same rule.
    const secretBox = await loadSecretBox(encryption)
    // Read once the app is ready, not while it is built: the database may still be opening or
    // migrating then (src/app.ts). No request is served before.
    app.addHook('onReady', async () => {
      signingKey = await ensureSigningKey(app.db, secretBox)
      resolveKey = embeddedKeyResolver(app.db, await loadVerificationKeys(app.db))
    })
    // Picks up a key rotated by another instance or by `npm run keys -- rotate`.
    const refresh = setInterval(() => {
      ensureSigningKey(app.db, secretBox).then(
        (key) => {
          signingKey = key
        },
        (error: Error) => app.log.warn({ err: { message: error.message } }, 'signing key refresh failed'),
      )
    }, SIGNING_KEY_REFRESH_MS)
    refresh.unref()
    app.addHook('onClose', async () => clearInterval(refresh))
  } else {
    metadata = await discoverProvider(identity.tokenIssuer)
    resolveKey = jwksKeyResolver(metadata.jwksUri, {
      maxStaleMs: identity.jwksMaxStaleMs,
      onReadFailure: (ageMs) =>
        app.log.warn(
          { keySetAgeSeconds: Number.isFinite(ageMs) ? Math.round(ageMs / 1000) : null },
          'the identity provider’s keys could not be read; the last set read is kept',
        ),
    })
    provider = createProviderClient(metadata, identity.clientId, identity.clientSecret)
  }

  await app.register(fastifyJwt, {
    // The current signing key, read when asked for: it is read once the app is ready, and a
    // rotation replaces it. The token issuer passes it with every token it signs.
    secret: {
      private: (_request: FastifyRequest, _token: unknown, done: (error: null, key?: string) => void) =>
        done(null, signingKey?.privateKey),
      public: (_request: FastifyRequest, token: unknown) => resolveKey((token as { header: object }).header),
    },
    decode: { complete: true },
    sign: { algorithm: 'RS256' },
    // RS256 only: `none` and HS* tokens (e.g. an HMAC keyed with our public key) never verify.
    verify: {
      algorithms: ['RS256'],
      allowedIss: identity.tokenIssuer,
      requiredClaims: ['sub', 'exp', 'iat'],
      cache: 1000,
    },
  })

  const resolvePrincipal = createPrincipalResolver(app.db, identity.clientId, {
    external: !identity.embeddedIssuer,
  })
  app.decorateRequest('principal', null)
  // The rate limiter and the access guard may both authenticate one request: count it once, and
  // fail a token that failed once again at once, rather than waiting a second time for an identity
  // provider that does not answer.
  const counted = new WeakSet<FastifyRequest>()
  const rejected = (request: FastifyRequest, error: unknown, reason = rejectionReason(error)) => {
    if (!counted.has(request)) {
      counted.add(request)
      app.serviceMetrics.tokenRejected(reason)
    }
    return error
  }
  // The embedded issuer's tokens live an hour and always name their session (src/identity/sessions.ts,
  // and the client_credentials grant); an external provider's, as long as it is configured to give.
  const claimRules: TokenClaimRules = identity.embeddedIssuer
    ? { maxLifetimeSeconds: ACCESS_TOKEN_TTL_SECONDS, requireSession: true }
    : { maxLifetimeSeconds: identity.accessTokenMaxLifetimeSeconds, requireSession: false }
  const failures = new WeakMap<FastifyRequest, AppError>()
  // A token seen before skips decoding and signature checks until it expires, but is held no longer
  // than the account read behind it, so that a deactivation or a role taken away reaches it just as
  // soon.
  // Filed under the end of its signature, and found only by the whole token: a map hashes each
  // request's new copy of its key in full, which for a token of a thousand characters took a few
  // microseconds, where comparing the whole token with the one found takes a fraction of that.
  const knownTokens = new TtlCache<string, { token: string; principal: Principal }>(
    ACCOUNT_CACHE_TTL_MS,
    KNOWN_TOKENS_MAX,
  )
  const knownPrincipal = (token: string) => {
    const known = knownTokens.get(tokenKey(token))
    return known?.token === token ? known.principal : undefined
  }
  const revokedSessions = new RevokedSessions(app.db, REVOCATION_POLL_MS, (error) =>
    app.log.warn({ err: { message: error.message } }, 'reading revoked sessions failed; will retry'),
  )
  app.addHook('onReady', () => revokedSessions.start())
  app.addHook('onClose', async () => revokedSessions.stop())
  const ended = (request: FastifyRequest, principal: Principal) => {
    if (!principal.sessionId || !revokedSessions.has(principal.sessionId)) return principal
    const error = new AppError(
      'AUTH_001',
      'The session of this token has ended (signed out, password changed or account deactivated); sign in again',
    )
    failures.set(request, error)
    throw rejected(request, error)
  }
  app.decorate('authenticate', async (request: FastifyRequest) => {
    const failure = failures.get(request)
    if (failure) throw failure
    const token = bearerTokenOf(request)
    const known = token && knownPrincipal(token)
    if (known) {
      request.principal = ended(request, known)
      return known
    }
    let claims: AccessTokenClaims
    try {
      claims = await request.jwtVerify<AccessTokenClaims>()
    } catch (error) {
      const appError = fromJwtError(rejected(request, error))
      failures.set(request, appError)
      throw appError
    }
    const refusal = refusedClaims(claims, claimRules)
    if (refusal) {
      const error = new AppError('AUTH_001', refusal)
      failures.set(request, error)
      throw rejected(request, error, 'invalid')
    }
    let principal: Principal
    try {
      principal = await resolvePrincipal(claims)
    } catch (error) {
      // A database failure here is not the token's fault.
      throw error instanceof AppError ? rejected(request, error) : error
    }
    if (token) {
      const heldUntil = Math.min(claims.exp * 1000, principal.accountReadUntil)
      knownTokens.set(tokenKey(token), { token, principal }, heldUntil - Date.now())
    }
    request.principal = ended(request, principal)
    return principal
  })
  app.decorate('verifyAccessToken', async (request: FastifyRequest, token: string) => {
    let claims: AccessTokenClaims
    try {
      // @fastify/jwt takes the token from `extractToken` at run time; its types leave the option out.
      const fromArgument: Partial<VerifyOptions> & { extractToken: () => string } = {
        extractToken: () => token,
      }
      claims = await request.jwtVerify<AccessTokenClaims>({ decode: {}, verify: fromArgument })
    } catch (error) {
      throw fromJwtError(error)
    }
    const refusal = refusedClaims(claims, claimRules)
    if (refusal) throw new AppError('AUTH_001', refusal)
    const principal = await resolvePrincipal(claims)
    if (principal.sessionId && revokedSessions.has(principal.sessionId)) {
      throw new AppError('AUTH_001', 'The session of this token has ended')
    }
    return { claims, principal }
  })
  const tokenIssuer = identity.embeddedIssuer
    ? createTokenIssuer(app.jwt, {
        issuer: identity.tokenIssuer,
        clientId: identity.clientId,
        signingKey: () => {
          if (!signingKey)
            throw new Error('The signing key is read when the app is ready: await app.ready() first')
          return signingKey
        },
      })
    : undefined
  app.decorate('tokenIssuer', tokenIssuer)
  app.decorate('identityProvider', metadata)
  app.decorate(
    'authBackend',
    tokenIssuer
      ? embeddedBackend(app.db, tokenIssuer, identity.clientId)
      : externalBackend(provider as ProviderClient, resolvePrincipal),
  )
}

export default fp(auth, { name: 'auth', dependencies: ['database', 'metrics'] })
