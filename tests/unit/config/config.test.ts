import { describe, expect, it } from 'vitest'
import { ConfigError, loadConfig } from '../../../src/config.js'

describe('loadConfig', () => {
  it('applies the documented defaults to an empty environment', () => {
    const config = loadConfig({})
    expect(config).toMatchObject({
      PORT: 8080,
      HOST: '0.0.0.0',
      DATA_DIR: './data',
      LOG_LEVEL: 'info',
      MIGRATE_ON_START: true,
      OIDC_REALM: 'ehr',
      OIDC_CLIENT_ID: 'ehr-api',
      embeddedIssuer: true,
      tokenIssuer: 'http://localhost:8080/realms/ehr',
    })
    expect(config.DATABASE_URL).toBeUndefined()
    expect(Object.isFrozen(config)).toBe(true)
  })

  it('converts text values and derives the issuer from PUBLIC_URL or OIDC_ISSUER_URL', () => {
    expect(loadConfig({ PORT: '3000', MIGRATE_ON_START: 'false' })).toMatchObject({
      PORT: 3000,
      MIGRATE_ON_START: false,
    })
    expect(loadConfig({ PUBLIC_URL: 'https://ehr.example/', OIDC_REALM: 'north' }).tokenIssuer).toBe(
      'https://ehr.example/realms/north',
    )
    const external = loadConfig({ OIDC_ISSUER_URL: 'https://idp.example/realms/ehr/' })
    expect(external).toMatchObject({ embeddedIssuer: false, tokenIssuer: 'https://idp.example/realms/ehr' })
  })

  it('sends mail to the log by default and links resets to $PUBLIC_URL/reset-password', () => {
    const config = loadConfig({})
    expect(config.SMTP_URL).toBeUndefined()
    expect(config.MAIL_FROM).toBe('EHR Service <no-reply@localhost>')
    expect(config.PASSWORD_RESET_URL).toBe('http://localhost:8080/reset-password')
    expect(loadConfig({ PUBLIC_URL: 'https://ehr.example/' }).PASSWORD_RESET_URL).toBe(
      'https://ehr.example/reset-password',
    )
    expect(
      loadConfig({ PASSWORD_RESET_URL: 'https://app.example/reset', SMTP_URL: 'smtps://mail.example' }),
    ).toMatchObject({ PASSWORD_RESET_URL: 'https://app.example/reset', SMTP_URL: 'smtps://mail.example' })
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
    expect(loadConfig({}).DATABASE_DIRECT_URL).toBeUndefined()
    expect(
      loadConfig({
        DATABASE_URL: 'postgres://ehr@pgbouncer:6432/ehr',
        DATABASE_DIRECT_URL: 'postgres://ehr@db/ehr',
      }),
    ).toMatchObject({ DATABASE_DIRECT_URL: 'postgres://ehr@db/ehr' })
    expect(() => loadConfig({ DATABASE_DIRECT_URL: 'mysql://user:hunter2@db' })).toThrow(
      /DATABASE_DIRECT_URL: .*\(value hidden\)/,
    )
    expect(() => loadConfig({ DATABASE_DIRECT_URL: 'mysql://user:hunter2@db' })).not.toThrow(/hunter2/)
  })

  it('takes DATABASE_READ_URLS only beside DATABASE_URL, and never echoes a bad one', () => {
    expect(loadConfig({}).DATABASE_READ_URLS).toBe('')
    const replicas = 'postgres://ehr:pw@replica1/ehr,postgres://ehr:pw@replica2/ehr'
    expect(loadConfig({ DATABASE_URL: 'postgres://ehr@db/ehr', DATABASE_READ_URLS: replicas })).toMatchObject(
      {
        DATABASE_READ_URLS: replicas,
      },
    )
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
    expect(loadConfig({}).webhookRetrySeconds).toEqual([5, 300, 1800, 7200, 18000, 36000, 36000])
    expect(loadConfig({ WEBHOOK_RETRY_SCHEDULE: '0.5,2' }).webhookRetrySeconds).toEqual([0.5, 2])
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
})
