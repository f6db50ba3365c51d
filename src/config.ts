import { type Static, Type } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import { DEFAULT_PREPARED_STATEMENTS } from '../db/prepared-statements.js'

/**
 * Every setting the service reads from its environment. `.env.example` lists the same names with
 * their defaults; keep the two in step.
 */
export const ConfigSchema = Type.Object({
  PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 8080 }),
  HOST: Type.String({ minLength: 1, default: '0.0.0.0' }),
  PUBLIC_URL: Type.Optional(Type.String({ pattern: '^https?://[^\\s/]+/?$' })),
  LOG_LEVEL: Type.Union(
    ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((level) => Type.Literal(level)),
    { default: 'info' },
  ),
  DATABASE_URL: Type.Optional(Type.String({ pattern: '^postgres(ql)?://' })),
  DATABASE_POOL_MAX: Type.Integer({ minimum: 1, maximum: 200, default: 10 }),
  DATABASE_PREPARED_STATEMENTS: Type.Integer({
    minimum: 0,
    maximum: 10_000,
    default: DEFAULT_PREPARED_STATEMENTS,
  }),
  DATA_DIR: Type.String({ minLength: 1, default: './data' }),
  MIGRATE_ON_START: Type.Boolean({ default: true }),
  BODY_LIMIT_BYTES: Type.Integer({ minimum: 1024, maximum: 50 * 1024 * 1024, default: 1024 * 1024 }),
  REQUEST_TIMEOUT_MS: Type.Integer({ minimum: 1000, maximum: 3_600_000, default: 120_000 }),
  CORS_ORIGINS: Type.String({ pattern: '^(https?://[^\\s,/]+)?(,https?://[^\\s,/]+)*$', default: '' }),
  OIDC_ISSUER_URL: Type.Optional(Type.String({ pattern: '^https?://' })),
  OIDC_CLIENT_ID: Type.String({ minLength: 1, default: 'ehr-api' }),
  OIDC_CLIENT_SECRET: Type.Optional(Type.String({ minLength: 1 })),
  OIDC_REALM: Type.String({ pattern: '^[A-Za-z0-9_-]+$', default: 'ehr' }),
  LOGIN_RESPONSE_STYLE: Type.Union([Type.Literal('envelope'), Type.Literal('flat')], { default: 'envelope' }),
  ADMIN_EMAIL: Type.String({ pattern: '^[^@\\s]+@[^@\\s]+\\.[^@\\s]+$', default: 'admin@example.com' }),
  ADMIN_PASSWORD: Type.Optional(Type.String({ minLength: 12 })),
  BOOTSTRAP_ORGANIZATION: Type.String({ minLength: 1, default: 'Default Practice' }),
  REDIS_URL: Type.Optional(Type.String({ pattern: '^rediss?://' })),
  RATE_LIMIT_AUTHENTICATED: Type.Integer({ minimum: 1, default: 1000 }),
  RATE_LIMIT_ANONYMOUS: Type.Integer({ minimum: 1, default: 100 }),
  RATE_LIMIT_WINDOW_SECONDS: Type.Integer({ minimum: 1, maximum: 86_400, default: 3600 }),
  RATE_LIMIT_CLIENTS: Type.String({
    pattern: '^([a-z0-9][a-z0-9._-]*=[0-9]+)?(,[a-z0-9][a-z0-9._-]*=[0-9]+)*$',
    default: '',
  }),
  TRUST_PROXY: Type.String({ minLength: 1, default: 'false' }),
  MAX_UPLOAD_BYTES: Type.Integer({ minimum: 1024, maximum: 5 * 1024 ** 3, default: 25 * 1024 * 1024 }),
  S3_BUCKET: Type.Optional(Type.String({ pattern: '^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$' })),
  S3_REGION: Type.String({ minLength: 1, default: 'us-east-1' }),
  S3_ENDPOINT: Type.Optional(Type.String({ pattern: '^https?://' })),
  S3_ACCESS_KEY_ID: Type.Optional(Type.String({ minLength: 1 })),
  S3_SECRET_ACCESS_KEY: Type.Optional(Type.String({ minLength: 1 })),
  S3_FORCE_PATH_STYLE: Type.Boolean({ default: true }),
  S3_PREFIX: Type.String({ pattern: '^([A-Za-z0-9._-]+/)*$', default: 'documents/' }),
  DOCUMENT_RETENTION_DAYS: Type.Integer({ minimum: 0, maximum: 36_500, default: 30 }),
  DEFAULT_CURRENCY: Type.String({ pattern: '^[A-Z]{3}$', default: 'USD' }),
  TAX_RATE_BASIS_POINTS: Type.Integer({ minimum: 0, maximum: 10_000, default: 0 }),
  JITSI_DOMAIN: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9.-]+(:[0-9]+)?$' })),
  JITSI_APP_ID: Type.Optional(Type.String({ minLength: 1 })),
  JITSI_APP_SECRET: Type.Optional(Type.String({ minLength: 32 })),
  AUDIT_FLUSH_INTERVAL_MS: Type.Integer({ minimum: 10, maximum: 60_000, default: 1000 }),
  SMTP_URL: Type.Optional(Type.String({ pattern: '^smtps?://' })),
  MAIL_FROM: Type.String({ pattern: '@', default: 'EHR Service <no-reply@localhost>' }),
  PASSWORD_RESET_URL: Type.Optional(Type.String({ pattern: '^https?://[^\\s]+$' })),
  ENCRYPTION_KEY: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9+/]{43}=$' })),
  OUTBOX_WORKER: Type.Boolean({ default: true }),
  OUTBOX_POLL_INTERVAL_MS: Type.Integer({ minimum: 50, maximum: 600_000, default: 1000 }),
  WEBHOOK_ALLOW_HTTP: Type.Boolean({ default: false }),
  WEBHOOK_ALLOW_PRIVATE_TARGETS: Type.Boolean({ default: false }),
  WEBHOOK_RETRY_SCHEDULE: Type.String({
    pattern: '^\\d+(\\.\\d+)?(,\\d+(\\.\\d+)?)*$',
    default: '5,300,1800,7200,18000,36000,36000',
  }),
  WEBHOOK_CONNECT_TIMEOUT_MS: Type.Integer({ minimum: 100, maximum: 60_000, default: 5000 }),
  WEBHOOK_TIMEOUT_MS: Type.Integer({ minimum: 100, maximum: 120_000, default: 10_000 }),
  WEBHOOK_LEASE_SECONDS: Type.Number({ minimum: 1, maximum: 3600, default: 60 }),
  WEBHOOK_CONCURRENCY: Type.Integer({ minimum: 1, maximum: 1000, default: 64 }),
  WEBHOOK_HOST_CONCURRENCY: Type.Integer({ minimum: 1, maximum: 1000, default: 8 }),
  WEBHOOK_DEACTIVATE_AFTER_SECONDS: Type.Integer({ minimum: 1, default: 5 * 86_400 }),
  WEBHOOK_SECRET_OVERLAP_SECONDS: Type.Integer({ minimum: 0, maximum: 30 * 86_400, default: 86_400 }),
})

type RawConfig = Static<typeof ConfigSchema>

export type Config = Readonly<
  Omit<RawConfig, 'PUBLIC_URL' | 'PASSWORD_RESET_URL'> & {
    /** WEBHOOK_RETRY_SCHEDULE as seconds: the delay before each retry after a failed attempt. */
    webhookRetrySeconds: readonly number[]
    /** CORS_ORIGINS as a list; empty: no cross-origin browser access. */
    corsOrigins: readonly string[]
    PUBLIC_URL: string
    /** The page a password reset mail links to, with `?token=…` appended. */
    PASSWORD_RESET_URL: string
    /** Issuer of the access tokens this service accepts (`iss`). */
    tokenIssuer: string
    embeddedIssuer: boolean
  }
>

export class ConfigError extends Error {}

/** Values of these variables may carry credentials and are never echoed back in errors. */
const SECRET_NAMES = /PASSWORD$|SECRET|DATABASE_URL|SMTP_URL|REDIS_URL|ENCRYPTION_KEY/

/**
 * Validates the environment once. Throws a ConfigError naming each bad variable, so a
 * misconfigured deployment stops at start instead of failing on its first request.
 */
export function loadConfig(env: Record<string, string | undefined>): Config {
  const input: Record<string, unknown> = {}
  for (const key of Object.keys(ConfigSchema.properties)) {
    const value = env[key]
    if (value !== undefined && value !== '') input[key] = value
  }
  const withDefaults = Value.Default(ConfigSchema, Value.Convert(ConfigSchema, input))
  const problems = [...Value.Errors(ConfigSchema, withDefaults)].map((error) => {
    const name = error.path.slice(1)
    const shown = SECRET_NAMES.test(name) ? 'value hidden' : `got ${JSON.stringify(error.value)}`
    return `${name}: ${error.message} (${shown})`
  })
  if (problems.length > 0) throw new ConfigError(`Invalid configuration:\n  ${problems.join('\n  ')}`)

  const raw = withDefaults as RawConfig
  // A lease shorter than an attempt would let a second instance claim a delivery still in flight.
  if (raw.WEBHOOK_LEASE_SECONDS * 1000 <= raw.WEBHOOK_TIMEOUT_MS) {
    throw new ConfigError(
      'Invalid configuration:\n  WEBHOOK_LEASE_SECONDS: must be longer than WEBHOOK_TIMEOUT_MS (an attempt must end within its lease)',
    )
  }
  const publicUrl = (raw.PUBLIC_URL ?? `http://localhost:${raw.PORT}`).replace(/\/$/, '')
  const embeddedIssuer = raw.OIDC_ISSUER_URL === undefined
  return Object.freeze({
    ...raw,
    PUBLIC_URL: publicUrl,
    webhookRetrySeconds: Object.freeze(raw.WEBHOOK_RETRY_SCHEDULE.split(',').map(Number)),
    corsOrigins: Object.freeze(raw.CORS_ORIGINS.split(',').filter(Boolean)),
    PASSWORD_RESET_URL: raw.PASSWORD_RESET_URL ?? `${publicUrl}/reset-password`,
    embeddedIssuer,
    tokenIssuer: embeddedIssuer
      ? `${publicUrl}/realms/${raw.OIDC_REALM}`
      : (raw.OIDC_ISSUER_URL as string).replace(/\/$/, ''),
  })
}
