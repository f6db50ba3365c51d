import { type Static, type TObject, type TProperties, Type } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import type { DatabaseSettings } from '../db/open-databases.js'
import { AuditEnv, type AuditSettings, auditProblems, auditSettings } from './config/audit.js'
import { BillingEnv, type BillingSettings, billingSettings } from './config/billing.js'
import { BootstrapEnv, type BootstrapSettings, bootstrapSettings } from './config/bootstrap.js'
import { BulkExportEnv, type BulkExportSettings, bulkExportSettings } from './config/bulk-export.js'
import { DatabaseEnv, databaseProblems, databaseSettings } from './config/database.js'
import {
  EncryptionEnv,
  type EncryptionSettings,
  encryptionProblems,
  encryptionSettings,
} from './config/encryption.js'
import { FhirEnv, type FhirSettings, fhirSettings } from './config/fhir.js'
import { HousekeepingEnv, type HousekeepingSettings, housekeepingSettings } from './config/housekeeping.js'
import { IdentityEnv, type IdentitySettings, identitySettings } from './config/identity.js'
import { LoggingEnv, type LoggingSettings, loggingSettings } from './config/logging.js'
import { MailEnv, type MailSettings, mailProblems, mailSettings, mailTransport } from './config/mail.js'
import { RateLimitEnv, type RateLimitSettings, rateLimitSettings } from './config/rate-limits.js'
import { ServerEnv, type ServerSettings, serverSettings } from './config/server.js'
import { StorageEnv, type StorageSettings, storageSettings } from './config/storage.js'
import { SyncEnv, type SyncSettings, syncSettings } from './config/sync.js'
import { TelehealthEnv, type TelehealthSettings, telehealthSettings } from './config/telehealth.js'
import { WebhookEnv, type WebhookSettings, webhookProblems, webhookSettings } from './config/webhooks.js'

/**
 * The environment variables by topic, in the order the configuration reference and `.env.example`
 * list them (both generated from these schemas by `npm run docs`). Each topic's schema has a
 * `title` (its heading) and may have a `description`.
 */
export const CONFIG_TOPICS = [
  ServerEnv,
  LoggingEnv,
  DatabaseEnv,
  StorageEnv,
  EncryptionEnv,
  IdentityEnv,
  BootstrapEnv,
  MailEnv,
  RateLimitEnv,
  WebhookEnv,
  BulkExportEnv,
  AuditEnv,
  HousekeepingEnv,
  SyncEnv,
  FhirEnv,
  BillingEnv,
  TelehealthEnv,
] as const

type Intersection<T> = (T extends unknown ? (value: T) => void : never) extends (value: infer I) => void
  ? I
  : never

/** The topics' variables in one flat schema, each name in one topic only. */
function mergeTopics(topics: readonly TObject[]): TObject {
  const properties: TProperties = {}
  for (const topic of topics) {
    for (const [name, schema] of Object.entries(topic.properties)) {
      if (name in properties) throw new Error(`${name} is in two configuration topics`)
      properties[name] = schema
    }
  }
  return Type.Object(properties)
}

/** Every setting the service reads from its environment, validated at once. */
export const ConfigSchema = mergeTopics(CONFIG_TOPICS)

/** The environment's values as validated, before they are read into `Config`. */
type Env = Intersection<Static<(typeof CONFIG_TOPICS)[number]>>

/** The settings the service reads, by topic; derived values (URLs, lists, durations) computed once. */
export interface Config {
  readonly server: Readonly<ServerSettings>
  readonly logging: Readonly<LoggingSettings>
  readonly database: Readonly<DatabaseSettings>
  readonly storage: Readonly<StorageSettings>
  readonly encryption: Readonly<EncryptionSettings>
  readonly identity: Readonly<IdentitySettings>
  readonly bootstrap: Readonly<BootstrapSettings>
  readonly mail: Readonly<MailSettings>
  readonly rateLimits: Readonly<RateLimitSettings>
  readonly webhooks: Readonly<WebhookSettings>
  readonly bulkExport: Readonly<BulkExportSettings>
  readonly audit: Readonly<AuditSettings>
  readonly housekeeping: Readonly<HousekeepingSettings>
  readonly sync: Readonly<SyncSettings>
  readonly fhir: Readonly<FhirSettings>
  readonly billing: Readonly<BillingSettings>
  readonly telehealth: Readonly<TelehealthSettings>
}

export class ConfigError extends Error {}

/** Values of these variables may carry credentials and are never echoed back in errors. */
const SECRET_NAMES =
  /PASSWORD$|SECRET|DATABASE_URL|DATABASE_DIRECT_URL|DATABASE_READ_URLS|SMTP_URL|REDIS_URL|ENCRYPTION_KEY/

const sharedDatabase = (env: Env) => env.DATABASE_URL !== undefined

/**
 * What the server itself needs on PostgreSQL, beyond valid values: every instance must decrypt with
 * the same key, and a reset mail that silently goes nowhere must be asked for explicitly. Commands
 * (migrate, user, seed) run without them; the keys command and the mailer check them where used.
 */
function serverProblems(env: Env): string[] {
  const shared = sharedDatabase(env)
  return [
    ...encryptionProblems(encryptionSettings(env, { dataDir: env.DATA_DIR, sharedDatabase: shared })),
    ...mailProblems({ transport: mailTransport(env, shared), smtpUrl: env.SMTP_URL }),
  ]
}

function settingsOf(env: Env): Config {
  const server = serverSettings(env)
  const storage = storageSettings(env)
  const shared = {
    dataDir: storage.dataDir,
    publicUrl: server.publicUrl,
    sharedDatabase: sharedDatabase(env),
  }
  return {
    server,
    logging: loggingSettings(env),
    database: databaseSettings(env, storage.dataDir),
    storage,
    encryption: encryptionSettings(env, shared),
    identity: identitySettings(env, server.publicUrl),
    bootstrap: bootstrapSettings(env),
    mail: mailSettings(env, shared),
    rateLimits: rateLimitSettings(env),
    webhooks: webhookSettings(env),
    bulkExport: bulkExportSettings(env),
    audit: auditSettings(env),
    housekeeping: housekeepingSettings(env),
    sync: syncSettings(env),
    fhir: fhirSettings(env, server.publicUrl),
    billing: billingSettings(env),
    telehealth: telehealthSettings(env),
  }
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value)
    for (const member of Object.values(value)) deepFreeze(member)
  }
  return value
}

/**
 * Validates the environment once and reads it into `Config`. Throws a ConfigError naming each bad
 * variable, all in one, so a misconfigured deployment stops at start instead of failing on its
 * first request, and is corrected in one go. `server`: also what the server itself requires
 * (serverProblems).
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

  // Checked beside values that may be invalid: a comparison with one that is not a number does not hold.
  const values = withDefaults as Env
  problems.push(...webhookProblems(values), ...databaseProblems(values), ...auditProblems(values))
  if (options.server) problems.push(...serverProblems(values))
  if (problems.length > 0) throw new ConfigError(`Invalid configuration:\n  ${problems.join('\n  ')}`)
  return deepFreeze(settingsOf(values))
}
