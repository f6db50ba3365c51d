import { type Static, Type } from '@sinclair/typebox'

export const ServerEnv = Type.Object(
  {
    PORT: Type.Integer({
      minimum: 0,
      maximum: 65535,
      default: 8080,
      description: 'TCP port the HTTP server listens on',
    }),
    HOST: Type.String({
      minLength: 1,
      default: '0.0.0.0',
      description: 'Interface the HTTP server binds; `0.0.0.0` accepts connections on every interface',
    }),
    PUBLIC_URL: Type.Optional(
      Type.String({
        pattern: '^https?://[^\\s/]+/?$',
        examples: ['https://ehr.example.com'],
        description:
          "The address clients use; unset = `http://localhost:$PORT`. The embedded issuer's `iss` is `$PUBLIC_URL/realms/$OIDC_REALM`, so every instance behind one address must have the same value",
      }),
    ),
    BODY_LIMIT_BYTES: Type.Integer({
      minimum: 1024,
      maximum: 50 * 1024 * 1024,
      default: 1024 * 1024,
      description: 'Largest accepted JSON body; larger is 413',
    }),
    REQUEST_TIMEOUT_MS: Type.Integer({
      minimum: 1000,
      maximum: 3_600_000,
      default: 120_000,
      description:
        'Longest time a client may take to send a whole request, uploads included; a slower one gets 408 and is disconnected',
    }),
    CORS_ORIGINS: Type.String({
      pattern: '^(https?://[^\\s,/]+)?(,https?://[^\\s,/]+)*$',
      default: '',
      description:
        'Comma-separated browser origins allowed to call the API, e.g. `https://portal.example.com`; empty: no CORS headers, so browsers on other origins are refused',
    }),
    TRUST_PROXY: Type.String({
      minLength: 1,
      default: 'false',
      description:
        '`true`, or comma-separated proxy addresses/CIDRs whose `X-Forwarded-For` is believed (the client IP of anonymous limits); `false` trusts no proxy',
    }),
  },
  { title: 'HTTP server' },
)

export interface ServerSettings {
  port: number
  host: string
  /** PUBLIC_URL without its trailing slash. */
  publicUrl: string
  bodyLimitBytes: number
  requestTimeoutMs: number
  /** Empty: no cross-origin browser access. */
  corsOrigins: readonly string[]
  /** Fastify's `trustProxy`: all proxies, none, or these addresses and CIDR ranges. */
  trustProxy: boolean | string[]
}

/** `true`, `false`, or a comma-separated list of proxy addresses and CIDR ranges to trust. */
function trustProxySetting(value: string): boolean | string[] {
  if (value === 'true' || value === 'false') return value === 'true'
  return value.split(',').map((entry) => entry.trim())
}

export function serverSettings(env: Static<typeof ServerEnv>): ServerSettings {
  return {
    port: env.PORT,
    host: env.HOST,
    publicUrl: (env.PUBLIC_URL ?? `http://localhost:${env.PORT}`).replace(/\/$/, ''),
    bodyLimitBytes: env.BODY_LIMIT_BYTES,
    requestTimeoutMs: env.REQUEST_TIMEOUT_MS,
    corsOrigins: env.CORS_ORIGINS.split(',').filter(Boolean),
    trustProxy: trustProxySetting(env.TRUST_PROXY),
  }
}
