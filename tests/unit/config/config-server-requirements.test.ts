import { describe, expect, it } from 'vitest'
import { ConfigError, loadConfig } from '../../../src/config.js'

const DATABASE_URL = 'postgres://127.0.0.1:1/none'
const ENCRYPTION_KEY = Buffer.alloc(32, 7).toString('base64')

/** The problems a ConfigError lists, one a line after its heading; none when the settings load. */
function problemsOf(load: () => unknown): string[] {
  try {
    load()
    return []
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError)
    const [heading, ...problems] = (error as Error).message.split('\n')
    expect(heading).toBe('Invalid configuration:')
    return problems.map((line) => line.trim())
  }
}

describe('loadConfig for the server', () => {
  it('names every setting PostgreSQL requires at once, beside any bad value', () => {
    const problems = problemsOf(() => loadConfig({ DATABASE_URL, PORT: 'eighty' }, { server: true }))
    expect(problems).toHaveLength(3)
    expect(problems[0]).toMatch(/^PORT: Expected integer/)
    expect(problems).toContainEqual(
      expect.stringMatching(/^ENCRYPTION_KEY: required when DATABASE_URL is set/),
    )
    expect(problems).toContainEqual(
      expect.stringMatching(/^SMTP_URL: required when DATABASE_URL is set .*MAIL_TRANSPORT=log/),
    )
  })

  it('names every bad combination of settings at once', () => {
    const problems = problemsOf(() =>
      loadConfig(
        {
          WEBHOOK_LEASE_SECONDS: '5',
          WEBHOOK_TIMEOUT_MS: '5000',
          AUDIT_RETENTION_DAYS: '30',
          DATABASE_READ_URLS: 'postgres://replica/db',
          MAIL_TRANSPORT: 'smtp',
        },
        { server: true },
      ),
    )
    expect(problems.map((problem) => problem.split(':')[0])).toEqual([
      'WEBHOOK_LEASE_SECONDS',
      'DATABASE_READ_URLS',
      'AUDIT_RETENTION_DAYS',
      'SMTP_URL',
    ])
  })

  it('starts on PostgreSQL with ENCRYPTION_KEY and either SMTP_URL or MAIL_TRANSPORT=log', () => {
    expect(
      problemsOf(() => loadConfig({ DATABASE_URL, ENCRYPTION_KEY, MAIL_TRANSPORT: 'log' }, { server: true })),
    ).toEqual([])
    expect(
      problemsOf(() =>
        loadConfig({ DATABASE_URL, ENCRYPTION_KEY, SMTP_URL: 'smtp://mail.example:587' }, { server: true }),
      ),
    ).toEqual([])
  })

  it('leaves them to the commands that need them otherwise (migrate, user, seed)', () => {
    expect(problemsOf(() => loadConfig({ DATABASE_URL }))).toEqual([])
  })
})
