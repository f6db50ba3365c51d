import { type Static, Type } from '@sinclair/typebox'
import type { DatabaseSettings } from '../../db/open-databases.js'
import { embeddedDatabaseDir } from '../../db/pglite-start.js'
import { EMBEDDED_SHARED_BUFFERS_MB } from '../../db/pglite-thread-client.js'
import { DEFAULT_PREPARED_STATEMENTS } from '../../db/prepared-statements.js'

export const DatabaseEnv = Type.Object(
  {
    DATABASE_URL: Type.Optional(
      Type.String({
        pattern: '^postgres(ql)?://',
        examples: ['postgres://ehr:secret@127.0.0.1:5432/ehr'],
        description:
          '`postgres://…` to use PostgreSQL (pooled; version 15 or later, with the `pg_trgm` and `btree_gist` extensions available); unset = embedded PGlite under `$DATA_DIR/pgdata`',
      }),
    ),
    DATABASE_DIRECT_URL: Type.Optional(
      Type.String({
        pattern: '^postgres(ql)?://',
        examples: ['postgres://ehr:secret@10.0.0.11:5432/ehr'],
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
      examples: ['postgres://ehr:secret@10.0.0.12:5432/ehr,postgres://ehr:secret@10.0.0.13:5432/ehr'],
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
  },
  {
    title: 'Database',
    description:
      'PostgreSQL with `DATABASE_URL`, where the server also requires `ENCRYPTION_KEY`, and `SMTP_URL` or `MAIL_TRANSPORT=log`; without it an embedded PostgreSQL (PGlite) in `$DATA_DIR/pgdata`, for one instance.',
  },
)

type Env = Static<typeof DatabaseEnv>

/** Replicas of the embedded database do not exist: the setting would silently do nothing. */
export function databaseProblems(env: Env): string[] {
  return env.DATABASE_READ_URLS !== '' && env.DATABASE_URL === undefined
    ? ['DATABASE_READ_URLS: read replicas need DATABASE_URL (the primary they replicate)']
    : []
}

/** `dataDir`: DATA_DIR, which holds the embedded database. */
export function databaseSettings(env: Env, dataDir: string): DatabaseSettings {
  return {
    url: env.DATABASE_URL,
    directUrl: env.DATABASE_DIRECT_URL ?? env.DATABASE_URL,
    poolMax: env.DATABASE_POOL_MAX,
    queryTimeoutMs: env.DATABASE_QUERY_TIMEOUT_MS,
    preparedStatements: env.DATABASE_PREPARED_STATEMENTS,
    readUrls: env.DATABASE_READ_URLS.split(',').filter(Boolean),
    replicaMaxLagMs: env.DATABASE_REPLICA_MAX_LAG_MS,
    replicaCheckIntervalMs: env.DATABASE_REPLICA_CHECK_INTERVAL_MS,
    embeddedDir: embeddedDatabaseDir(dataDir),
    embeddedSharedBuffersMb: env.EMBEDDED_SHARED_BUFFERS_MB,
    migrateOnStart: env.MIGRATE_ON_START,
  }
}
