import { describe, expect, it } from 'vitest'
import { buildApp } from '../../../src/app.js'
import { ConfigError, loadConfig } from '../../../src/config.js'
import { configuredMailer, maskAddress } from '../../../src/lib/mailer.js'

const ENCRYPTION_KEY = Buffer.alloc(32, 7).toString('base64')
// Nothing listens here: the service must stop on its configuration before it tries to connect.
const DATABASE_URL = 'postgres://127.0.0.1:1/none'
const silentLog = { info: () => {}, debug: () => {} }

describe('MAIL_TRANSPORT', () => {
  it('is absent from the defaults, and takes smtp or log only', () => {
    expect(loadConfig({}).mail.transport).toBe('log')
    expect(loadConfig({ SMTP_URL: 'smtp://mail.example:587' }).mail.transport).toBe('smtp')
    expect(loadConfig({ DATABASE_URL }).mail.transport).toBeUndefined()
    expect(loadConfig({ DATABASE_URL, MAIL_TRANSPORT: 'log' }).mail.transport).toBe('log')
    expect(() => loadConfig({ MAIL_TRANSPORT: 'stdout' })).toThrow(/MAIL_TRANSPORT/)
  })

  it('refuses to start on PostgreSQL without SMTP_URL, naming the settings on one line', async () => {
    const config = loadConfig({ DATABASE_URL, ENCRYPTION_KEY, LOG_LEVEL: 'silent' })
    const failure = await buildApp(config).then(
      () => undefined,
      (error: unknown) => error,
    )
    expect(failure).toBeInstanceOf(ConfigError)
    const [heading, ...problems] = (failure as Error).message.split('\n')
    expect(heading).toBe('Invalid configuration:')
    expect(problems).toHaveLength(1)
    expect(problems[0]).toMatch(/^ {2}SMTP_URL: required when DATABASE_URL is set .*MAIL_TRANSPORT=log/)
  })

  it('accepts PostgreSQL without SMTP_URL when MAIL_TRANSPORT=log is explicit, and never logs links there', async () => {
    const logged: { level: string; details: object }[] = []
    const mailer = configuredMailer(
      loadConfig({ DATABASE_URL, MAIL_TRANSPORT: 'log', MAIL_FROM: 'x@example.test' }).mail,
      {
        info: (details) => void logged.push({ level: 'info', details }),
        debug: (details) => void logged.push({ level: 'debug', details }),
      },
    )
    await mailer.send({
      to: 'jane.doe@example.test',
      subject: 'Reset your EHR password',
      text: 'Open https://ehr.example/reset-password?token=secret-token-value',
    })
    expect(logged).toEqual([
      { level: 'info', details: { mail: { to: 'j***@example.test', subject: 'Reset your EHR password' } } },
    ])
  })

  it('refuses MAIL_TRANSPORT=smtp without SMTP_URL', () => {
    expect(() =>
      configuredMailer(loadConfig({ MAIL_TRANSPORT: 'smtp', MAIL_FROM: 'x@example.test' }).mail, silentLog),
    ).toThrow(/SMTP_URL: required when MAIL_TRANSPORT=smtp/)
  })

  it('masks addresses to their first character and domain', () => {
    expect(maskAddress('jane.doe@example.test')).toBe('j***@example.test')
    expect(maskAddress('not-an-address')).toBe('***')
  })
})
