import { type Static, Type } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import { EMBEDDED_SHARED_BUFFERS_MB } from '../db/pglite-thread-client.js'
import { DEFAULT_PREPARED_STATEMENTS } from '../db/prepared-statements.js'

/**
 * Every setting the service reads from its environment. `.env.example` lists the same names with
 * their defaults; keep the two in step.
 */
export const ConfigSchema = Type.Object({
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
      description:
        "The address clients use; unset = `http://localhost:$PORT`. The embedded issuer's `iss` is `$PUBLIC_URL/realms/$OIDC_REALM`, so every instance behind one address must have the same value",
    }),
  ),
  LOG_LEVEL: Type.Union(
    ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((level) => Type.Literal(level)),
    { default: 'info', description: 'Least severe level written to the log; `silent` writes nothing' },
  ),
  DATABASE_URL: Type.Optional(
    Type.String({
      pattern: '^postgres(ql)?://',
      description:
        '`postgres://…` to use PostgreSQL (pooled; version 15 or later, with the `pg_trgm` and `btree_gist` extensions available); unset = embedded PGlite under `$DATA_DIR/pgdata`',
    }),
  ),
  DATABASE_DIRECT_URL: Type.Optional(
    Type.String({
      pattern: '^postgres(ql)?://',
      description:
        'A direct connection to the same PostgreSQL primary, not through a pooler, for what needs a session of its own or its own statement limits: LISTEN/NOTIFY (webhook delivery and change feed wake-ups), the housekeeping lock, migrations and bulk exports; a few connections per instance. Set it when `DATABASE_URL` goes through PgBouncer in transaction mode (see docs/operations.md, Behind PgBouncer); unset = `DATABASE_URL`',
    }),
  ),
  DATABASE_POOL_MAX: Type.Integer({
    minimum: 1,
    maximum: 200,
    default: 10,
    description: 'PostgreSQL pool size: most connections the service keeps open at once',
  }),
  DATABASE_QUERY_TIMEOUT_MS: Type.Integer({
    minimum: 100,
    maximum: 600_000,
    default: 5000,
    description:
      'The longest a request waits on PostgreSQL: for a pooled connection, and for one statement (the server cancels it, and the client gives up on a connection that stops answering, as over a cut network, and replaces it). The request then answers 503 SYS_002. Bulk exports and migrations have limits of their own',
  }),
  DATABASE_READ_URLS: Type.String({
    default: '',
    pattern: '^(postgres(ql)?://[^,]+(,postgres(ql)?://[^,]+)*)?$',
    description:
      'Comma-separated `postgres://…` addresses of read replicas of DATABASE_URL (streaming replication). Lists, searches and charts are read from a replica that is in rotation and has replayed the caller’s own writes; everything else reads the primary. Empty: every query goes to DATABASE_URL',
  }),
  DATABASE_REPLICA_MAX_LAG_MS: Type.Integer({
    minimum: 100,
    maximum: 600_000,
    default: 5000,
    description:
      'A read replica further behind the primary than this is taken out of rotation until it catches up (its lag is in `ehr_db_replica_lag_seconds` and the health check)',
  }),
  DATABASE_REPLICA_CHECK_INTERVAL_MS: Type.Integer({
    minimum: 100,
    maximum: 60_000,
    default: 1000,
    description: 'How often each read replica’s position and health are checked',
  }),
  DATABASE_PREPARED_STATEMENTS: Type.Integer({
    minimum: 0,
    maximum: 10_000,
    default: DEFAULT_PREPARED_STATEMENTS,
    description:
      'How many distinct statements each PostgreSQL connection prepares (parsed and planned once, then reused): inserts, updates and deletes, key lookups, and the patient list opened without filters (whose plan PostgreSQL still makes for the values while a general one would cost more); other reads are planned for their values on every call. `0` for a connection pooler in transaction mode that cannot keep them (PgBouncer before 1.21)',
  }),
  DATA_DIR: Type.String({
    minLength: 1,
    default: './data',
    description:
      'Embedded database files (`$DATA_DIR/pgdata`), document bytes without S3 (`$DATA_DIR/documents`) and the generated encryption key; its free space is reported by `/actuator/health`',
  }),
  EMBEDDED_SHARED_BUFFERS_MB: Type.Integer({
    minimum: 16,
    maximum: 1024,
    default: EMBEDDED_SHARED_BUFFERS_MB,
    description:
      'The embedded database’s page cache (PostgreSQL’s `shared_buffers`), allocated and zeroed at every start. The default opens about a third of a second sooner and uses about 100 MB less memory than PostgreSQL’s 128 MB; raise it for a large embedded database read at random (a 62 MB table read at random was about a fifth slower at 32 MB than at 128 MB). Ignored with `DATABASE_URL`',
  }),
  MIGRATE_ON_START: Type.Boolean({
    default: true,
    description: 'Apply database migrations at start (`npm run migrate` does it on demand)',
  }),
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
  OIDC_ISSUER_URL: Type.Optional(
    Type.String({
      pattern: '^https?://',
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
  ADMIN_EMAIL: Type.String({
    pattern: '^[^@\\s]+@[^@\\s]+\\.[^@\\s]+$',
    default: 'admin@example.com',
    description: 'E-mail of the bootstrap administrator (first start only)',
  }),
  ADMIN_PASSWORD: Type.Optional(
    Type.String({
      minLength: 12,
      description:
        'Password of the bootstrap administrator (first start only; at least 12 characters); unset = generated and printed once',
    }),
  ),
  BOOTSTRAP_ORGANIZATION: Type.String({
    minLength: 1,
    default: 'Default Practice',
    description:
      'Name of the bootstrap organization (first start only; group path derived: `/default-practice`)',
  }),
  REDIS_URL: Type.Optional(
    Type.String({
      pattern: '^rediss?://',
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
  TRUST_PROXY: Type.String({
    minLength: 1,
    default: 'false',
    description:
      '`true`, or comma-separated proxy addresses/CIDRs whose `X-Forwarded-For` is believed (the client IP of anonymous limits); `false` trusts no proxy',
  }),
  MAX_UPLOAD_BYTES: Type.Integer({
    minimum: 1024,
    maximum: 5 * 1024 ** 3,
    default: 25 * 1024 * 1024,
    description: 'Largest document upload (25 MiB); larger is 413',
  }),
  S3_BUCKET: Type.Optional(
    Type.String({
      pattern: '^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$',
      description:
        'Keep document bytes in this S3-compatible bucket (shared by all instances); unset = files under `$DATA_DIR/documents`',
    }),
  ),
  S3_REGION: Type.String({ minLength: 1, default: 'us-east-1', description: 'Bucket region' }),
  S3_ENDPOINT: Type.Optional(
    Type.String({
      pattern: '^https?://',
      description: 'Endpoint of an S3-compatible store (MinIO, Ceph, …); unset = AWS',
    }),
  ),
  S3_ACCESS_KEY_ID: Type.Optional(
    Type.String({
      minLength: 1,
      description: "Access key id; unset = the SDK's default chain (environment, instance role)",
    }),
  ),
  S3_SECRET_ACCESS_KEY: Type.Optional(
    Type.String({
      minLength: 1,
      description: "Secret access key; unset = the SDK's default chain (environment, instance role)",
    }),
  ),
  S3_FORCE_PATH_STYLE: Type.Boolean({
    default: true,
    description: 'Path-style bucket addressing (what most S3-compatible servers need)',
  }),
  S3_PREFIX: Type.String({
    pattern: '^([A-Za-z0-9._-]+/)*$',
    default: 'documents/',
    description: 'Key prefix of the stored objects',
  }),
  DOCUMENT_RETENTION_DAYS: Type.Integer({
    minimum: 0,
    maximum: 36_500,
    default: 30,
    description: 'How long the bytes of a deleted document are kept before they are purged (0: at once)',
  }),
  DEFAULT_CURRENCY: Type.String({
    pattern: '^[A-Z]{3}$',
    default: 'USD',
    description: 'ISO 4217 currency of invoices that name none',
  }),
  TAX_RATE_BASIS_POINTS: Type.Integer({
    minimum: 0,
    maximum: 10_000,
    default: 0,
    description: 'Tax on invoice subtotals in basis points (825 = 8.25 %), rounded half up',
  }),
  JITSI_DOMAIN: Type.Optional(
    Type.String({
      pattern: '^[A-Za-z0-9.-]+(:[0-9]+)?$',
      description:
        'Host of the Jitsi Meet deployment, e.g. `meet.example.org`; without all three Jitsi settings joining a room answers 503',
    }),
  ),
  JITSI_APP_ID: Type.Optional(
    Type.String({
      minLength: 1,
      description: 'App id of Jitsi token authentication (`iss` of the room tokens)',
    }),
  ),
  JITSI_APP_SECRET: Type.Optional(
    Type.String({
      minLength: 32,
      description:
        'Secret of Jitsi token authentication (signs the room tokens, HS256; at least 32 characters)',
    }),
  ),
  AUDIT_FLUSH_INTERVAL_MS: Type.Integer({
    minimum: 10,
    maximum: 60_000,
    default: 1000,
    description:
      'How often the audit records of failed calls whose insert failed are retried (every other record is written before its call is answered)',
  }),
  SMTP_URL: Type.Optional(
    Type.String({
      pattern: '^smtps?://',
      description:
        'Mail server for password reset mails, `smtp://user:pass@host:587` or `smtps://…:465`; query parameters are passed to nodemailer (e.g. `?requireTLS=true`). Unset = no mail is sent (see `MAIL_TRANSPORT`); required with `DATABASE_URL` unless `MAIL_TRANSPORT=log`',
    }),
  ),
  MAIL_FROM: Type.String({
    pattern: '@',
    default: 'EHR Service <no-reply@localhost>',
    description: 'Sender of the password reset mails',
  }),
  PASSWORD_RESET_URL: Type.Optional(
    Type.String({
      pattern: '^https?://[^\\s]+$',
      description:
        'The page a reset mail links to, with `?token=…` appended; the page posts the token to `/api/auth/reset-password`. Unset = `$PUBLIC_URL/reset-password`',
    }),
  ),
  ENCRYPTION_KEY: Type.Optional(
    Type.String({
      pattern: '^[A-Za-z0-9+/]{43}=$',
      description:
        '32 random bytes, base64 (`openssl rand -base64 32`): encrypts the token-signing private keys and webhook secrets at rest (AES-256-GCM). Unset with the embedded database: generated once into `$DATA_DIR/encryption.key` (mode 0600). **Required with `DATABASE_URL`** (the service refuses to start without it), since every instance must decrypt with the same key. Losing it makes stored secrets unusable',
    }),
  ),
  ENCRYPTION_KEY_PREVIOUS: Type.Optional(
    Type.String({
      pattern: '^[A-Za-z0-9+/]{43}=$',
      description:
        'The key `ENCRYPTION_KEY` replaces, during a key change only: values still sealed with it stay readable while `npm run keys -- reencrypt` moves them to the new key (docs/operations.md, Key and secret rotation). Also usable the other way round, the new key here and the old one still in `ENCRYPTION_KEY`, so that every instance can read the new key before any writes with it. Unset once the re-encryption is done',
    }),
  ),
  REQUIRE_IF_MATCH: Type.Boolean({
    default: false,
    description:
      'Make `If-Match` mandatory on conditional writes (PUT, PATCH, DELETE and state changes of versioned records): without it they answer 428 RES_003, so no client can overwrite a change it has not seen',
  }),
  TOMBSTONE_RETENTION_DAYS: Type.Integer({
    minimum: 1,
    maximum: 36_500,
    default: 90,
    description:
      'How long sync readers (`updatedSince`, `cursor`) see a removed record as a tombstone; a client away for longer must sync again from zero',
  }),
  FHIR_MRN_SYSTEM: Type.String({
    pattern: '^(https?://[^\\s]+|urn:[^\\s]+)$',
    default: 'urn:ehr-service:mrn',
    description:
      'The identifier system of medical record numbers in FHIR resources (`Patient.identifier.system`); set your organization’s own, e.g. `https://hospital.example/fhir/mrn`',
  }),
  BULK_EXPORT_WORKER: Type.Boolean({
    default: true,
    description:
      'Run FHIR bulk export jobs in this instance (`false`: leave them to other instances; kick-off and status still work)',
  }),
  BULK_EXPORT_FILE_MAX_BYTES: Type.Integer({
    minimum: 1024,
    maximum: 4_294_967_296,
    default: 67_108_864,
    description:
      'The largest NDJSON file of a bulk export (a type with more data gets several files); a single resource larger than this gets a file of its own',
  }),
  BULK_EXPORT_RETENTION_HOURS: Type.Number({
    minimum: 0.001,
    maximum: 8760,
    default: 24,
    description:
      'How long a finished bulk export (its status and files) is kept; afterwards its status URL answers 404 and the files are deleted',
  }),
  BULK_EXPORT_CONCURRENCY_PER_ORGANIZATION: Type.Integer({
    minimum: 1,
    maximum: 100,
    default: 1,
    description: 'How many bulk exports of one organization run at a time, over all instances; others wait',
  }),
  BULK_EXPORT_POOL_MAX: Type.Integer({
    minimum: 1,
    maximum: 50,
    default: 2,
    description:
      'PostgreSQL connections of bulk export jobs, a pool of their own so that exports never take the API’s connections (with the embedded database they share its one connection)',
  }),
  BULK_EXPORT_STATEMENT_TIMEOUT_MS: Type.Integer({
    minimum: 1000,
    maximum: 3_600_000,
    default: 300_000,
    description: 'The statement timeout of bulk export queries (their own pool’s setting)',
  }),
  BULK_EXPORT_LEASE_SECONDS: Type.Number({
    minimum: 1,
    maximum: 3600,
    default: 60,
    description:
      'How long a running export is reserved for one instance without news from it; after a crash another instance resumes it from its last finished file after this',
  }),
  OUTBOX_WORKER: Type.Boolean({
    default: true,
    description:
      'Run the webhook delivery worker in this instance (`false`: leave delivery to other instances)',
  }),
  OUTBOX_POLL_INTERVAL_MS: Type.Integer({
    minimum: 50,
    maximum: 600_000,
    default: 1000,
    description:
      "How often the worker looks for due deliveries besides being woken by this instance's commits, by NOTIFY from instances that run no worker (`OUTBOX_WORKER=false`) and by its own retry timers",
  }),
  WEBHOOK_ALLOW_HTTP: Type.Boolean({
    default: false,
    description: 'Accept `http://` webhook URLs. **Development and tests only**: events travel unencrypted',
  }),
  WEBHOOK_ALLOW_PRIVATE_TARGETS: Type.Boolean({
    default: false,
    description:
      'Accept hosts on loopback, private, link-local, unique-local or metadata addresses. **Development and tests only** (SSRF)',
  }),
  WEBHOOK_RETRY_SCHEDULE: Type.String({
    pattern: '^\\d+(\\.\\d+)?(,\\d+(\\.\\d+)?)*$',
    default: '5,300,1800,7200,18000,36000,36000',
    description:
      'Seconds before each retry of a failed delivery (±20% jitter); after the last the delivery is FAILED',
  }),
  WEBHOOK_CONNECT_TIMEOUT_MS: Type.Integer({
    minimum: 100,
    maximum: 60_000,
    default: 5000,
    description: 'Time to connect to a receiver',
  }),
  WEBHOOK_TIMEOUT_MS: Type.Integer({
    minimum: 100,
    maximum: 120_000,
    default: 10_000,
    description: 'Time for a whole attempt (connect, send, answer)',
  }),
  WEBHOOK_LEASE_SECONDS: Type.Number({
    minimum: 1,
    maximum: 3600,
    default: 60,
    description:
      'How long a claimed delivery is reserved for one instance; after a crash it is pending again after this. Must exceed `WEBHOOK_TIMEOUT_MS`',
  }),
  WEBHOOK_CONCURRENCY: Type.Integer({
    minimum: 1,
    maximum: 1000,
    default: 64,
    description: 'Attempts one instance runs at once, in all',
  }),
  WEBHOOK_HOST_CONCURRENCY: Type.Integer({
    minimum: 1,
    maximum: 1000,
    default: 8,
    description:
      'Attempts one instance runs at once to one receiving `host:port`, so a slow receiver cannot take every slot',
  }),
  WEBHOOK_DEACTIVATE_AFTER_SECONDS: Type.Integer({
    minimum: 1,
    default: 5 * 86_400,
    description: 'A webhook whose attempts have all failed this long (5 days) is deactivated',
  }),
  WEBHOOK_SECRET_OVERLAP_SECONDS: Type.Integer({
    minimum: 0,
    maximum: 30 * 86_400,
    default: 86_400,
    description: 'After a secret rotation the previous secret also signs this long',
  }),
  // Mail transport and housekeeping (retention of tokens, webhook deliveries and audit records).
  MAIL_TRANSPORT: Type.Optional(
    Type.Union([Type.Literal('smtp'), Type.Literal('log')], {
      description:
        'How password reset mails leave: `smtp` (through `SMTP_URL`, which it requires) or `log` (not sent: the log records that a mail was due, to a masked address; the reset link itself only at `debug` level, and never in production mode, i.e. with `DATABASE_URL` or `NODE_ENV=production`). Unset = `smtp` when `SMTP_URL` is set; otherwise `log` with the embedded database, while with `DATABASE_URL` the service refuses to start until `SMTP_URL` or `MAIL_TRANSPORT=log` is set',
    }),
  ),
  NODE_ENV: Type.Optional(
    Type.String({
      description:
        '`production` (the Docker image sets it) is production mode: no password reset link is ever written to the log, whatever `LOG_LEVEL` says',
    }),
  ),
  WEBHOOK_DELIVERY_RETENTION_DAYS: Type.Integer({
    minimum: 0,
    maximum: 36_500,
    default: 30,
    description:
      'Finished webhook deliveries (succeeded or failed) and their recorded attempts are purged this many days after their last change; `0` keeps them forever. Pending deliveries are never purged',
  }),
  AUDIT_RETENTION_DAYS: Type.Integer({
    minimum: 0,
    maximum: 36_500,
    default: 2190,
    description:
      'Audit records older than this many days are purged: `0` (keep forever) or at least 365. The default, 2190 days (6 years), is the HIPAA retention period for required documentation; check the rules that apply to you before lowering it',
  }),
  HOUSEKEEPING_WORKER: Type.Boolean({
    default: true,
    description:
      'Run the housekeeping job in this instance: it purges expired password reset and refresh tokens, and webhook deliveries and audit records past their retention, in batches; on PostgreSQL one instance at a time (an advisory lock). `false`: leave it to other instances',
  }),
  HOUSEKEEPING_INTERVAL_MINUTES: Type.Integer({
    minimum: 1,
    maximum: 1440,
    default: 60,
    description: 'How often the housekeeping job runs (the first run is a minute after start)',
  }),
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
const SECRET_NAMES =
  /PASSWORD$|SECRET|DATABASE_URL|DATABASE_DIRECT_URL|DATABASE_READ_URLS|SMTP_URL|REDIS_URL|ENCRYPTION_KEY/

/**
 * What the server itself needs on PostgreSQL, beyond valid values: every instance must decrypt with
 * the same key, and a reset mail that silently goes nowhere must be asked for explicitly. Commands
 * (migrate, user, seed) run without them; the keys command and the mailer check them where used.
 */
function serverRequirements(raw: RawConfig): string[] {
  const problems: string[] = []
  if (raw.DATABASE_URL !== undefined && raw.ENCRYPTION_KEY === undefined) {
    problems.push(
      'ENCRYPTION_KEY: required when DATABASE_URL is set (every instance must use the same key); create one with `openssl rand -base64 32`',
    )
  }
  if (raw.SMTP_URL === undefined) {
    if (raw.MAIL_TRANSPORT === 'smtp') problems.push('SMTP_URL: required when MAIL_TRANSPORT=smtp')
    else if (raw.MAIL_TRANSPORT === undefined && raw.DATABASE_URL !== undefined) {
      problems.push(
        'SMTP_URL: required when DATABASE_URL is set (password reset mails must reach users); set MAIL_TRANSPORT=log to send none and only log them',
      )
    }
  }
  return problems
}

/**
 * Validates the environment once. Throws a ConfigError naming each bad variable, all in one, so a
 * misconfigured deployment stops at start instead of failing on its first request, and is
 * corrected in one go. `server`: also what the server itself requires (serverRequirements).
 */
export function loadConfig(
  env: Record<string, string | undefined>,
  options: { server?: boolean } = {},
): Config {
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

  // Read beside values that may be invalid: a comparison with one that is not a number does not hold.
  const raw = withDefaults as RawConfig
  // A lease shorter than an attempt would let a second instance claim a delivery still in flight.
  if (raw.WEBHOOK_LEASE_SECONDS * 1000 <= raw.WEBHOOK_TIMEOUT_MS) {
    problems.push(
      'WEBHOOK_LEASE_SECONDS: must be longer than WEBHOOK_TIMEOUT_MS (an attempt must end within its lease)',
    )
  }
  // Replicas of the embedded database do not exist: the setting would silently do nothing.
  if (raw.DATABASE_READ_URLS !== '' && raw.DATABASE_URL === undefined) {
    problems.push('DATABASE_READ_URLS: read replicas need DATABASE_URL (the primary they replicate)')
  }
  // The audit trail is a regulatory record: a typo such as 30 must not purge all but a month of it.
  if (raw.AUDIT_RETENTION_DAYS > 0 && raw.AUDIT_RETENTION_DAYS < 365) {
    problems.push(
      `AUDIT_RETENTION_DAYS: must be 0 (keep forever) or at least 365 (got ${raw.AUDIT_RETENTION_DAYS})`,
    )
  }
  if (options.server) problems.push(...serverRequirements(raw))
  if (problems.length > 0) throw new ConfigError(`Invalid configuration:\n  ${problems.join('\n  ')}`)

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
