import { describe, expect, it } from 'vitest'
import { CONFIG_TOPICS, ConfigError, ConfigSchema, loadConfig } from '../../../src/config.js'

describe('loadConfig', () => {
  it('applies the documented defaults to an empty environment', () => {
    const config = loadConfig({})
    expect(config).toMatchObject({
      server: { port: 8080, host: '0.0.0.0', publicUrl: 'http://localhost:8080' },
      storage: { dataDir: './data' },
      logging: { level: 'info' },
      database: { migrateOnStart: true },
      identity: {
        realm: 'ehr',
        clientId: 'ehr-api',
        embeddedIssuer: true,
        tokenIssuer: 'http://localhost:8080/realms/ehr',
      },
    })
    expect(config.database.url).toBeUndefined()
    expect(Object.isFrozen(config)).toBe(true)
    expect(Object.isFrozen(config.webhooks.retrySeconds)).toBe(true)
  })

  it('converts text values and derives the issuer from PUBLIC_URL or OIDC_ISSUER_URL', () => {
    expect(loadConfig({ PORT: '3000', MIGRATE_ON_START: 'false' })).toMatchObject({
      server: { port: 3000 },
      database: { migrateOnStart: false },
    })
    expect(loadConfig({ PUBLIC_URL: 'https://ehr.example/', OIDC_REALM: 'north' }).identity.tokenIssuer).toBe(
      'https://ehr.example/realms/north',
    )
    const external = loadConfig({ OIDC_ISSUER_URL: 'https://idp.example/realms/ehr/' })
    expect(external.identity).toMatchObject({
      embeddedIssuer: false,
      tokenIssuer: 'https://idp.example/realms/ehr',
    })
  })

  it('sends mail to the log by default and links resets to $PUBLIC_URL/reset-password', () => {
    const { mail } = loadConfig({})
    expect(mail).toMatchObject({
      transport: 'log',
      smtpUrl: undefined,
      from: 'EHR Service <no-reply@localhost>',
    })
    expect(mail.passwordResetUrl).toBe('http://localhost:8080/reset-password')
    expect(loadConfig({ PUBLIC_URL: 'https://ehr.example/' }).mail.passwordResetUrl).toBe(
      'https://ehr.example/reset-password',
    )
    expect(
      loadConfig({ PASSWORD_RESET_URL: 'https://app.example/reset', SMTP_URL: 'smtps://mail.example' }).mail,
    ).toMatchObject({
      transport: 'smtp',
      passwordResetUrl: 'https://app.example/reset',
      smtpUrl: 'smtps://mail.example',
    })
  })

  it('names every bad variable and what was wrong', () => {
    let error: unknown
    try {
      loadConfig({ PORT: 'eighty', LOG_LEVEL: 'loud', MIGRATE_ON_START: 'maybe', DATABASE_URL: 'mysql://x' })
    } catch (caught) {
      error = caught
    }
    expect(error).toBeInstanceOf(ConfigError)
    const message = (error as Error).message
    expect(message).toMatch(/PORT: Expected integer \(got "eighty"\)/)
    expect(message).toContain('LOG_LEVEL')
    expect(message).toMatch(/MIGRATE_ON_START: Expected boolean/)
    expect(message).toContain('DATABASE_URL')
  })

  it('never echoes the value of SMTP_URL, which carries the mail password', () => {
    expect(() => loadConfig({ SMTP_URL: 'http://mailer:hunter2@mail.example' })).toThrow(
      /SMTP_URL: .*\(value hidden\)/,
    )
    expect(() => loadConfig({ SMTP_URL: 'http://mailer:hunter2@mail.example' })).not.toThrow(/hunter2/)
  })

  it('never echoes the value of a secret variable', () => {
    expect(() => loadConfig({ ADMIN_PASSWORD: 'short', DATABASE_URL: 'mysql://user:hunter2@db' })).toThrow(
      /ADMIN_PASSWORD: .*\(value hidden\)/,
    )
    try {
      loadConfig({ ADMIN_PASSWORD: 'short', DATABASE_URL: 'mysql://user:hunter2@db' })
    } catch (error) {
      expect((error as Error).message).not.toMatch(/short|hunter2/)
    }
  })

  it('takes DATABASE_DIRECT_URL as a PostgreSQL URL and never echoes a bad one', () => {
    expect(loadConfig({}).database.directUrl).toBeUndefined()
    expect(loadConfig({ DATABASE_URL: 'postgres://ehr@db/ehr' }).database.directUrl).toBe(
      'postgres://ehr@db/ehr',
    )
    expect(
      loadConfig({
        DATABASE_URL: 'postgres://ehr@pgbouncer:6432/ehr',
        DATABASE_DIRECT_URL: 'postgres://ehr@db/ehr',
      }).database,
    ).toMatchObject({ url: 'postgres://ehr@pgbouncer:6432/ehr', directUrl: 'postgres://ehr@db/ehr' })
    expect(() => loadConfig({ DATABASE_DIRECT_URL: 'mysql://user:hunter2@db' })).toThrow(
      /DATABASE_DIRECT_URL: .*\(value hidden\)/,
    )
    expect(() => loadConfig({ DATABASE_DIRECT_URL: 'mysql://user:hunter2@db' })).not.toThrow(/hunter2/)
  })

  it('takes DATABASE_READ_URLS only beside DATABASE_URL, and never echoes a bad one', () => {
    expect(loadConfig({}).database.readUrls).toEqual([])
    const replicas = 'postgres://ehr:pw@replica1/ehr,postgres://ehr:pw@replica2/ehr'
    expect(
      loadConfig({ DATABASE_URL: 'postgres://ehr@db/ehr', DATABASE_READ_URLS: replicas }).database.readUrls,
    ).toEqual(['postgres://ehr:pw@replica1/ehr', 'postgres://ehr:pw@replica2/ehr'])
    expect(() => loadConfig({ DATABASE_READ_URLS: replicas })).toThrow(
      /DATABASE_READ_URLS: read replicas need DATABASE_URL/,
    )
    expect(() =>
      loadConfig({
        DATABASE_URL: 'postgres://ehr@db/ehr',
        DATABASE_READ_URLS: 'postgres://a,mysql://u:hunter2@b',
      }),
    ).toThrow(/DATABASE_READ_URLS: .*\(value hidden\)/)
    expect(() =>
      loadConfig({
        DATABASE_URL: 'postgres://ehr@db/ehr',
        DATABASE_READ_URLS: 'postgres://a,mysql://u:hunter2@b',
      }),
    ).not.toThrow(/hunter2/)
  })

  it('parses the webhook retry schedule and keeps a lease longer than an attempt', () => {
    expect(loadConfig({}).webhooks.retrySeconds).toEqual([5, 300, 1800, 7200, 18000, 36000, 36000])
    expect(loadConfig({ WEBHOOK_RETRY_SCHEDULE: '0.5,2' }).webhooks.retrySeconds).toEqual([0.5, 2])
    expect(() => loadConfig({ WEBHOOK_RETRY_SCHEDULE: '5,,10' })).toThrow(/WEBHOOK_RETRY_SCHEDULE/)
    expect(() => loadConfig({ WEBHOOK_LEASE_SECONDS: '5', WEBHOOK_TIMEOUT_MS: '5000' })).toThrow(
      /WEBHOOK_LEASE_SECONDS: must be longer than WEBHOOK_TIMEOUT_MS/,
    )
  })

  it('never echoes the value of ENCRYPTION_KEY', () => {
    expect(() => loadConfig({ ENCRYPTION_KEY: 'not-a-key-but-secret' })).toThrow(
      /ENCRYPTION_KEY: .*\(value hidden\)/,
    )
    expect(() => loadConfig({ ENCRYPTION_KEY: 'not-a-key-but-secret' })).not.toThrow(/not-a-key/)
  })

  it('puts every variable under exactly one titled topic', () => {
    const names = CONFIG_TOPICS.flatMap((topic) => Object.keys(topic.properties))
    expect(new Set(names).size).toBe(names.length)
    expect(names.sort()).toEqual(Object.keys(ConfigSchema.properties).sort())
    for (const topic of CONFIG_TOPICS) expect(topic.title, Object.keys(topic.properties)[0]).toBeTruthy()
  })

  it('derives lists, durations and optional groups once, by topic', () => {
    const config = loadConfig({
      TRUST_PROXY: '10.0.0.1, 10.1.0.0/16',
      CORS_ORIGINS: 'https://a.example,https://b.example',
      RATE_LIMIT_CLIENTS: 'billing-sync=20000,etl=5000',
      RATE_LIMIT_WINDOW_SECONDS: '60',
      HOUSEKEEPING_INTERVAL_MINUTES: '5',
      OIDC_JWKS_MAX_STALE_SECONDS: '30',
      BOOTSTRAP_ORGANIZATION: 'North Clinic',
      S3_BUCKET: 'ehr-documents',
      JITSI_DOMAIN: 'meet.example.org',
      JITSI_APP_ID: 'ehr',
      DATA_DIR: '/var/lib/ehr',
    })
    expect(config.server.trustProxy).toEqual(['10.0.0.1', '10.1.0.0/16'])
    expect(config.server.corsOrigins).toEqual(['https://a.example', 'https://b.example'])
    expect([...config.rateLimits.clients]).toEqual([
      ['billing-sync', 20000],
      ['etl', 5000],
    ])
    expect(config.rateLimits.windowMs).toBe(60_000)
    expect(config.housekeeping.intervalMs).toBe(300_000)
    expect(config.identity.jwksMaxStaleMs).toBe(30_000)
    expect(config.bootstrap.organization).toEqual({ name: 'North Clinic', groupPath: '/north-clinic' })
    expect(config.storage).toMatchObject({
      documentsDir: '/var/lib/ehr/documents',
      s3: { bucket: 'ehr-documents', region: 'us-east-1', prefix: 'documents/', forcePathStyle: true },
    })
    expect(config.database.embeddedDir).toBe('/var/lib/ehr/pgdata')
    expect(config.fhir.base).toBe('http://localhost:8080/fhir/R4')
    // Jitsi needs all three settings: without the secret, no room link is signed.
    expect(config.telehealth.jitsi).toBeUndefined()
    expect(loadConfig({ TRUST_PROXY: 'true' }).server.trustProxy).toBe(true)
    expect(loadConfig({}).storage.s3).toBeUndefined()
  })
})
