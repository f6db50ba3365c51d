import { type Static, Type } from '@sinclair/typebox'

export const IdentityEnv = Type.Object(
  {
    OIDC_ISSUER_URL: Type.Optional(
      Type.String({
        pattern: '^https?://',
        examples: ['https://sso.example.com/realms/ehr'],
        description:
          'An external OpenID Connect issuer (e.g. `https://idp.example/realms/ehr`); unset = the service is its own (embedded) issuer',
      }),
    ),
    OIDC_CLIENT_ID: Type.String({
      minLength: 1,
      default: 'ehr-api',
      description:
        "Tokens must name this client in `aud` or `azp`; the public client of the embedded issuer, and this service's client at an external provider",
    }),
    OIDC_CLIENT_SECRET: Type.Optional(
      Type.String({
        minLength: 1,
        description:
          "This service's client secret at the external provider (for forwarding login, refresh and logout)",
      }),
    ),
    OIDC_JWKS_MAX_STALE_SECONDS: Type.Integer({
      minimum: 0,
      maximum: 86_400,
      default: 3600,
      description:
        'With OIDC_ISSUER_URL: how long the provider’s signing keys last read keep verifying tokens while the provider cannot be read (a key it stops publishing stops verifying at the next successful read, within 5 minutes)',
    }),
    OIDC_ACCESS_TOKEN_MAX_LIFETIME_SECONDS: Type.Integer({
      minimum: 60,
      maximum: 86_400,
      default: 3600,
      description:
        'With OIDC_ISSUER_URL: the longest lifetime (`exp` − `iat`) of the provider’s access tokens that is accepted; a token meant to live longer is refused (401). The default is the specification’s access-token lifetime (an hour); raise it to the lifespan of a provider that gives longer-lived tokens',
    }),
    OIDC_REALM: Type.String({
      pattern: '^[A-Za-z0-9_-]+$',
      default: 'ehr',
      description: 'Realm name of the embedded issuer (`/realms/$OIDC_REALM`)',
    }),
    LOGIN_RESPONSE_STYLE: Type.Union([Type.Literal('envelope'), Type.Literal('flat')], {
      default: 'envelope',
      description:
        'Shape of the login and refresh answers: `envelope` (`data.token`, `data.refreshToken`, …) or `flat` (`access_token`, `refresh_token`, …)',
    }),
    CLIENT_SECRET_OVERLAP_SECONDS: Type.Integer({
      minimum: 0,
      maximum: 30 * 86_400,
      default: 86_400,
      description:
        'After a confidential client’s secret is rotated (`POST /api/clients/{id}/rotate-secret`) the previous secret keeps working this long, so the integration can switch without a refused token request; `0` ends it at once',
    }),
    PASSWORD_HASH_THREADS: Type.Integer({
      minimum: 1,
      maximum: 64,
      default: 1,
      description:
        'Threads that hash passwords (sign-ins, password changes, client secrets), apart from the threads disk access, compression and DNS share. A hash keeps one core busy for a few hundred milliseconds: one thread leaves the other core of two to everything else; raise it with the cores',
    }),
    PASSWORD_HASH_QUEUE: Type.Integer({
      minimum: 0,
      maximum: 10_000,
      default: 8,
      description:
        'Password checks that may wait for a hashing thread; one more gets 429 `RATE_001` with `Retry-After` at once',
    }),
    PASSWORD_HASH_WAIT_MS: Type.Integer({
      minimum: 100,
      maximum: 60_000,
      default: 2000,
      description:
        'The longest a password check waits for a hashing thread; then it gets 429 `RATE_001` with `Retry-After`',
    }),
  },
  {
    title: 'Identity and sign-in',
    description:
      'The service issues its own tokens unless `OIDC_ISSUER_URL` names an external OpenID provider (docs/auth.md).',
  },
)

export interface IdentitySettings {
  /** No OIDC_ISSUER_URL: the service issues its own tokens. */
  embeddedIssuer: boolean
  /** Issuer of the access tokens this service accepts (`iss`). */
  tokenIssuer: string
  realm: string
  clientId: string
  clientSecret: string | undefined
  jwksMaxStaleMs: number
  accessTokenMaxLifetimeSeconds: number
  loginResponseStyle: 'envelope' | 'flat'
  clientSecretOverlapSeconds: number
  passwordHashing: { threads: number; queue: number; waitMs: number }
}

/** `publicUrl`: the address the embedded issuer is reached at. */
export function identitySettings(env: Static<typeof IdentityEnv>, publicUrl: string): IdentitySettings {
  const embeddedIssuer = env.OIDC_ISSUER_URL === undefined
  return {
    embeddedIssuer,
    tokenIssuer: embeddedIssuer
      ? `${publicUrl}/realms/${env.OIDC_REALM}`
      : (env.OIDC_ISSUER_URL as string).replace(/\/$/, ''),
    realm: env.OIDC_REALM,
    clientId: env.OIDC_CLIENT_ID,
    clientSecret: env.OIDC_CLIENT_SECRET,
    jwksMaxStaleMs: env.OIDC_JWKS_MAX_STALE_SECONDS * 1000,
    accessTokenMaxLifetimeSeconds: env.OIDC_ACCESS_TOKEN_MAX_LIFETIME_SECONDS,
    loginResponseStyle: env.LOGIN_RESPONSE_STYLE,
    clientSecretOverlapSeconds: env.CLIENT_SECRET_OVERLAP_SECONDS,
    passwordHashing: {
      threads: env.PASSWORD_HASH_THREADS,
      queue: env.PASSWORD_HASH_QUEUE,
      waitMs: env.PASSWORD_HASH_WAIT_MS,
    },
  }
}
