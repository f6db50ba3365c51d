import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { buildTestApp } from '../../helpers/app.js'
import { newOrganization } from '../../helpers/factories.js'

/** An app whose every log line is kept, and a reset mail requested through it. */
async function resetMailLog(environment: Record<string, string>) {
  const raw: string[] = []
  const app: App = await buildTestApp(environment, undefined, {
    logStream: { write: (line: string) => void raw.push(line) },
  })
  try {
    const user = await (await newOrganization(app)).user('PROVIDER')
    const response = await app.inject({
      method: 'POST',
      url: '/api/auth/forgot-password',
      payload: { email: user.email },
    })
    expect(response.statusCode).toBe(200)
    await app.background.settled()
    const resets = await app.db
      .selectFrom('password_reset_tokens')
      .select('id')
      .where('user_id', '=', user.id)
      .execute()
    expect(resets).toHaveLength(1)
    return { raw: raw.join(''), lines: raw.map((line) => JSON.parse(line)), email: user.email }
  } finally {
    await app.close()
  }
}

describe('password reset mails without SMTP_URL', () => {
  let info: Awaited<ReturnType<typeof resetMailLog>>
  let production: Awaited<ReturnType<typeof resetMailLog>>

  beforeAll(async () => {
    info = await resetMailLog({ LOG_LEVEL: 'info' })
    production = await resetMailLog({ LOG_LEVEL: 'debug', NODE_ENV: 'production' })
  })
  afterAll(() => {})

  it('never write the reset link, or the address, at info', () => {
    expect(info.raw).not.toMatch(/reset-password\?token=/)
    expect(info.raw).not.toContain(info.email)
    const [line] = info.lines.filter((entry) => entry.mail !== undefined)
    expect(line).toMatchObject({
      level: 30,
      msg: 'mail not sent (MAIL_TRANSPORT=log)',
      mail: { to: `${info.email[0]}***@example.test`, subject: 'Reset your EHR password' },
    })
  })

  it('never write the reset link in production mode (NODE_ENV=production), even at debug', () => {
    expect(production.raw).not.toMatch(/token=/)
    expect(production.raw).not.toContain(production.email)
    expect(production.lines.filter((entry) => entry.mail !== undefined)).toHaveLength(1)
  })
})
