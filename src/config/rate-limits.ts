import { type Static, Type } from '@sinclair/typebox'

export const RateLimitEnv = Type.Object(
  {
    REDIS_URL: Type.Optional(
      Type.String({
        pattern: '^rediss?://',
        examples: ['redis://127.0.0.1:6379'],
        description: '`redis://…`: rate-limit counters shared by all instances; unset = counted per instance',
      }),
    ),
    RATE_LIMIT_AUTHENTICATED: Type.Integer({
      minimum: 1,
      default: 1000,
      description: 'Requests per window for a signed-in caller (per token subject)',
    }),
    RATE_LIMIT_ANONYMOUS: Type.Integer({
      minimum: 1,
      default: 100,
      description: 'Requests per window without a valid token (per client IP), sign-ins apart',
    }),
    RATE_LIMIT_WINDOW_SECONDS: Type.Integer({
      minimum: 1,
      maximum: 86_400,
      default: 3600,
      description: 'The rate-limit window',
    }),
    RATE_LIMIT_CLIENTS: Type.String({
      pattern: '^([a-z0-9][a-z0-9._-]*=[0-9]+)?(,[a-z0-9][a-z0-9._-]*=[0-9]+)*$',
      default: '',
      description: 'Higher limits for particular clients (`azp`), e.g. `billing-sync=20000,etl=5000`',
    }),
    RATE_LIMIT_SIGN_IN_ACCOUNT: Type.Integer({
      minimum: 1,
      default: 10,
      description:
        'Failed sign-ins per sign-in window for one account (username, from any address); then its sign-ins get 429 until the window ends. Sign-ins do not count against `RATE_LIMIT_ANONYMOUS`',
    }),
    RATE_LIMIT_SIGN_IN_ADDRESS: Type.Integer({
      minimum: 1,
      default: 50,
      description:
        'Failed sign-ins per sign-in window from one client IP, whatever the accounts; then every sign-in from it gets 429 until the window ends',
    }),
    RATE_LIMIT_SIGN_IN_WINDOW_SECONDS: Type.Integer({
      minimum: 1,
      maximum: 86_400,
      default: 900,
      description: 'The window of the failed sign-in limits',
    }),
  },
  {
    title: 'Rate limits',
    description: 'A caller past its limit gets 429 `RATE_001` with `Retry-After`.',
  },
)

export interface RateLimitSettings {
  /** Counters shared by every instance; unset: each instance counts alone. */
  redisUrl: string | undefined
  authenticated: number
  anonymous: number
  windowMs: number
  /** Limits of particular clients (`azp`) instead of `authenticated`. */
  clients: ReadonlyMap<string, number>
  signIn: { perAccount: number; perAddress: number; windowMs: number }
}

/** `billing-sync=10000,etl=5000`: limits for particular clients (`azp`) above the default. */
function clientLimits(setting: string): Map<string, number> {
  return new Map(
    setting
      .split(',')
      .filter(Boolean)
      .map((entry) => {
        const [clientId, limit] = entry.split('=')
        return [clientId as string, Number(limit)]
      }),
  )
}

export function rateLimitSettings(env: Static<typeof RateLimitEnv>): RateLimitSettings {
  return {
    redisUrl: env.REDIS_URL,
    authenticated: env.RATE_LIMIT_AUTHENTICATED,
    anonymous: env.RATE_LIMIT_ANONYMOUS,
    windowMs: env.RATE_LIMIT_WINDOW_SECONDS * 1000,
    clients: clientLimits(env.RATE_LIMIT_CLIENTS),
    signIn: {
      perAccount: env.RATE_LIMIT_SIGN_IN_ACCOUNT,
      perAddress: env.RATE_LIMIT_SIGN_IN_ADDRESS,
      windowMs: env.RATE_LIMIT_SIGN_IN_WINDOW_SECONDS * 1000,
    },
  }
}
