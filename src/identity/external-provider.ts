import type { JsonWebKey } from 'node:crypto'
import { AppError } from '../errors.js'
import { lazyAgent } from '../runtime/lazy-undici.js'

export interface ProviderTokens {
  access_token: string
  refresh_token?: string
  expires_in: number
}

/** The provider answered a grant with 400/401 (bad credentials, bad or revoked refresh token, bad code). */
export class ProviderRejection extends Error {
  constructor(
    readonly status: number,
    readonly error: string,
  ) {
    super(`identity provider rejected the request: ${error}`)
  }
}

const providerUnavailable = () =>
  new AppError('SYS_001', 'The identity provider did not answer; try again shortly', {
    status: 503,
    message: 'Identity provider unavailable',
  })

// A hung identity provider must not hold requests (and their sockets) for long: under 4 s for each
// step, so that sign-in, refresh and logout answer 503 within the documented 5 s.
export const PROVIDER_TIMEOUT_MS = 4000
const providerAgent = lazyAgent({
  connect: { timeout: PROVIDER_TIMEOUT_MS },
  headersTimeout: PROVIDER_TIMEOUT_MS,
  bodyTimeout: PROVIDER_TIMEOUT_MS,
})
const MAX_RESPONSE_BYTES = 256 * 1024

// A kept-alive connection the provider closed meanwhile (it restarted): a GET is safely sent again.
const CLOSED_CONNECTION = new Set(['UND_ERR_SOCKET', 'ECONNRESET', 'UND_ERR_CLOSED'])

async function call(
  url: string,
  form?: Record<string, string>,
  retried = false,
): Promise<{
  status: number
  json: Record<string, unknown>
}> {
  try {
    const { agent: dispatcher, request } = await providerAgent.client()
    const response = await request(url, {
      dispatcher,
      method: form ? 'POST' : 'GET',
      headers: form
        ? { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' }
        : {},
      ...(form ? { body: new URLSearchParams(form).toString() } : {}),
    })
    const text = await response.body.text()
    if (text.length > MAX_RESPONSE_BYTES) throw new Error('response too large')
    return { status: response.statusCode, json: (text ? JSON.parse(text) : {}) as Record<string, unknown> }
  } catch (error) {
    if (error instanceof AppError) throw error
    if (!form && !retried && CLOSED_CONNECTION.has(String((error as { code?: string }).code))) {
      return call(url, form, true)
    }
    throw providerUnavailable()
  }
}

export interface ProviderMetadata {
  issuer: string
  tokenEndpoint: string
  /** Where the provider publishes its signing keys. */
  jwksUri: string
  revocationEndpoint?: string
  userinfoEndpoint?: string
  endSessionEndpoint?: string
  authorizationEndpoint?: string
  introspectionEndpoint?: string
  /** As its discovery document says, or OpenID Connect Discovery's default when it does not. */
  grantTypesSupported: string[]
  tokenEndpointAuthMethodsSupported: string[]
  tokenEndpointAuthSigningAlgValuesSupported?: string[]
  codeChallengeMethodsSupported?: string[]
  scopesSupported?: string[]
}

const urlOf = (value: unknown) => (typeof value === 'string' ? value : undefined)
const listOf = (value: unknown) =>
  Array.isArray(value) && value.every((item) => typeof item === 'string') ? (value as string[]) : undefined
/** Only the members that are set: the metadata's optional members are absent, not undefined. */
const defined = <T extends object>(members: T) =>
  Object.fromEntries(Object.entries(members).filter(([, value]) => value !== undefined)) as {
    [K in keyof T]?: Exclude<T[K], undefined>
  }

/**
 * Reads the provider's discovery document, retrying with backoff (the provider may start after
 * us). Fails with a message naming the issuer when it stays unreachable or does not match.
 */
export async function discoverProvider(issuer: string, attempts = 5): Promise<ProviderMetadata> {
  let reason = ''
  for (let attempt = 0; attempt < attempts; attempt++) {
    if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, 250 * 2 ** attempt))
    try {
      const { status, json } = await call(`${issuer}/.well-known/openid-configuration`)
      if (status !== 200) {
        reason = `HTTP ${status}`
        continue
      }
      if (json.issuer !== issuer) throw new Error(`the document names issuer ${String(json.issuer)}`)
      if (typeof json.token_endpoint !== 'string') throw new Error('the document has no token_endpoint')
      if (typeof json.jwks_uri !== 'string') throw new Error('the document has no jwks_uri')
      return {
        issuer,
        tokenEndpoint: json.token_endpoint,
        jwksUri: json.jwks_uri,
        grantTypesSupported: listOf(json.grant_types_supported) ?? ['authorization_code', 'implicit'],
        tokenEndpointAuthMethodsSupported: listOf(json.token_endpoint_auth_methods_supported) ?? [
          'client_secret_basic',
        ],
        ...defined({
          revocationEndpoint: urlOf(json.revocation_endpoint),
          userinfoEndpoint: urlOf(json.userinfo_endpoint),
          endSessionEndpoint: urlOf(json.end_session_endpoint),
          authorizationEndpoint: urlOf(json.authorization_endpoint),
          introspectionEndpoint: urlOf(json.introspection_endpoint),
          tokenEndpointAuthSigningAlgValuesSupported: listOf(
            json.token_endpoint_auth_signing_alg_values_supported,
          ),
          codeChallengeMethodsSupported: listOf(json.code_challenge_methods_supported),
          scopesSupported: listOf(json.scopes_supported),
        }),
      }
    } catch (error) {
      if (!(error instanceof AppError))
        throw new Error(`OIDC_ISSUER_URL ${issuer}: ${(error as Error).message}`)
      reason = 'unreachable'
    }
  }
  throw new Error(`Could not read the OpenID configuration of OIDC_ISSUER_URL ${issuer} (${reason})`)
}

/** The provider's signing keys as it publishes them now (503 when it cannot be read). */
export async function providerKeys(jwksUri: string): Promise<JsonWebKey[]> {
  const { status, json } = await call(jwksUri)
  if (status !== 200 || !Array.isArray(json.keys)) throw providerUnavailable()
  return json.keys as JsonWebKey[]
}

/** This service as a confidential (or public) client of the external provider. */
export function createProviderClient(metadata: ProviderMetadata, clientId: string, clientSecret?: string) {
  const clientAuth = { client_id: clientId, ...(clientSecret ? { client_secret: clientSecret } : {}) }

  async function grant(form: Record<string, string>): Promise<ProviderTokens> {
    const { status, json } = await call(metadata.tokenEndpoint, { ...clientAuth, ...form })
    if (status === 200 && typeof json.access_token === 'string') return json as unknown as ProviderTokens
    if (status === 400 || status === 401) {
      if (json.error === 'invalid_client' || json.error === 'unauthorized_client') {
        throw new AppError(
          'SYS_001',
          'The identity provider does not accept this service as a client; check OIDC_CLIENT_ID and OIDC_CLIENT_SECRET',
          { status: 503, message: 'Identity provider misconfigured' },
        )
      }
      throw new ProviderRejection(status, String(json.error ?? 'invalid_grant'))
    }
    throw providerUnavailable()
  }

  return {
    passwordGrant: (username: string, password: string) =>
      grant({ grant_type: 'password', username, password, scope: 'openid profile email' }),
    refresh: (refreshToken: string) => grant({ grant_type: 'refresh_token', refresh_token: refreshToken }),
    exchangeCode: (code: string, redirectUri: string, codeVerifier?: string) =>
      grant({
        grant_type: 'authorization_code',
        code,
        redirect_uri: redirectUri,
        ...(codeVerifier ? { code_verifier: codeVerifier } : {}),
      }),
    /**
     * Ends the session of a refresh token: RFC 7009 revocation where the provider offers it,
     * otherwise Keycloak's logout endpoint. Unknown tokens are not an error (logout is idempotent).
     */
    async endSession(refreshToken: string): Promise<void> {
      const url = metadata.revocationEndpoint ?? metadata.endSessionEndpoint
      if (!url) throw providerUnavailable()
      const form = metadata.revocationEndpoint
        ? { ...clientAuth, token: refreshToken, token_type_hint: 'refresh_token' }
        : { ...clientAuth, refresh_token: refreshToken }
      const { status } = await call(url, form)
      if (status >= 500) throw providerUnavailable()
    },
  }
}

export type ProviderClient = ReturnType<typeof createProviderClient>
