import { createHash, randomUUID } from 'node:crypto'
import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { createUser } from '../../../src/modules/users/service.js'
import { buildTestApp } from '../../helpers/app.js'
import { bearer, newOrganization, TEST_PASSWORD, type TestUser } from '../../helpers/factories.js'
import { mailHeader, mailText, startSmtpServer } from '../../helpers/servers/smtp-server.js'

const RESET_PAGE = 'https://ehr.example.test/account/reset'
const NEW_PASSWORD = 'a brand new passphrase'

let app: App
let smtp: Awaited<ReturnType<typeof startSmtpServer>>

beforeAll(async () => {
  smtp = await startSmtpServer()
  app = await buildTestApp({ SMTP_URL: smtp.url, PASSWORD_RESET_URL: RESET_PAGE })
})
afterAll(async () => {
  await app.close()
  await smtp.close()
})

const post = (app: App, path: string, payload: object, headers: Record<string, string> = {}) =>
  app.inject({ method: 'POST', url: `/api/auth/${path}`, payload, headers })

const login = (username: string, password: string) => post(app, 'login', { username, password })

async function signIn(user: TestUser, password = TEST_PASSWORD) {
  const response = await login(user.email, password)
  expect(response.statusCode).toBe(200)
  return response.json().data as { token: string; refreshToken: string }
}

/** Asks for a reset mail, waits for the work the request started, and returns the mails it sent. */
async function forgotPassword(email: string) {
  const before = smtp.received.length
  const response = await post(app, 'forgot-password', { email })
  await app.background.settled()
  return { response, mails: smtp.received.slice(before) }
}

/** The token of the link mailed to a user for a reset. */
async function resetToken(user: TestUser): Promise<string> {
  const { mails } = await forgotPassword(user.email)
  expect(mails).toHaveLength(1)
  const link = new URL(mailText(mails[0] as (typeof mails)[number]).match(/https:\/\/\S+/)?.[0] ?? '')
  return link.searchParams.get('token') ?? ''
}

const resetPassword = (token: string, newPassword = NEW_PASSWORD) =>
  post(app, 'reset-password', { token, newPassword })

const resetTokensOf = (userId: number) =>
  app.db
    .selectFrom('password_reset_tokens')
    .select(['token_hash', 'expires_at', 'used_at'])
    .where('user_id', '=', userId)
    .execute()

const sessionsOf = (userId: number) =>
  app.db.selectFrom('sessions').select(['revoked_reason']).where('user_id', '=', userId).execute()

describe('POST /api/auth/forgot-password', () => {
  it('answers 200 with the same body for a known and an unknown address, and mails only the known one', async () => {
    const user = await (await newOrganization(app)).user('PROVIDER')
    const known = await forgotPassword(user.email.toUpperCase())
    const unknown = await forgotPassword(`${randomUUID()}@example.test`)

    expect(known.response.statusCode).toBe(200)
    expect(unknown.response.statusCode).toBe(200)
    expect(known.response.body).toBe(unknown.response.body)
    expect(known.response.json()).toMatchObject({ success: true, data: {} })
    expect(unknown.mails).toEqual([])
    expect(known.mails.map((mail) => mail.to)).toEqual([[user.email]])

    const mail = known.mails[0] as (typeof known.mails)[number]
    expect(mailHeader(mail, 'To')).toBe(user.email)
    expect(mailHeader(mail, 'From')).toBe('EHR Service <no-reply@localhost>')
    expect(mailHeader(mail, 'Subject')).toBe('Reset your EHR password')
    const link = new URL(mailText(mail).match(/https:\/\/\S+/)?.[0] ?? '')
    expect(`${link.origin}${link.pathname}`).toBe(RESET_PAGE)
    const token = link.searchParams.get('token') ?? ''
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/)

    const rows = await resetTokensOf(user.id)
    expect(rows).toHaveLength(1)
    const row = rows[0] as (typeof rows)[number]
    expect(row.token_hash).toBe(createHash('sha256').update(token).digest('base64url'))
    expect(row.used_at).toBeNull()
    const minutesLeft = (row.expires_at.getTime() - Date.now()) / 60_000
    expect(minutesLeft).toBeGreaterThan(29)
    expect(minutesLeft).toBeLessThanOrEqual(30)
  })

  it('mails nothing to a deactivated account, a service account or an account without a password', async () => {
    const organization = await newOrganization(app)
    const inactive = await organization.user('PROVIDER')
    const service = await organization.user('PROVIDER')
    const external = await organization.user('PROVIDER')
    await app.db.updateTable('users').set({ active: false }).where('id', '=', inactive.id).execute()
    await app.db.updateTable('users').set({ kind: 'SERVICE' }).where('id', '=', service.id).execute()
    await app.db.updateTable('users').set({ password_hash: null }).where('id', '=', external.id).execute()

    for (const user of [inactive, service, external]) {
      const { response, mails } = await forgotPassword(user.email)
      expect(response.statusCode, user.email).toBe(200)
      expect(mails, user.email).toEqual([])
      expect(await resetTokensOf(user.id), user.email).toEqual([])
    }
  })
})

describe('POST /api/auth/reset-password', () => {
  it('sets the new password once, clears a temporary password and ends every session', async () => {
    const user = await (await newOrganization(app)).user('PROVIDER')
    const session = await signIn(user)
    await app.db
      .updateTable('users')
      .set({ password_change_required: true })
      .where('id', '=', user.id)
      .execute()
    const token = await resetToken(user)

    const response = await resetPassword(token)
    expect(response.statusCode).toBe(200)
    expect(response.json()).toMatchObject({ success: true, data: {} })

    const again = await resetPassword(token, 'yet another passphrase')
    expect(again.statusCode).toBe(400)
    expect(again.json()).toMatchObject({
      success: false,
      message: 'Invalid reset token',
      error: { code: 'AUTH_001' },
    })

    expect((await login(user.email, TEST_PASSWORD)).statusCode).toBe(401)
    expect((await signIn(user, NEW_PASSWORD)).token).toBeTypeOf('string')
    const refresh = await post(app, 'refresh', { refreshToken: session.refreshToken })
    expect(refresh.statusCode).toBe(400)
    expect(await sessionsOf(user.id)).toContainEqual({ revoked_reason: 'PASSWORD_RESET' })
    expect((await resetTokensOf(user.id))[0]?.used_at).toBeInstanceOf(Date)
  })

  it('returns 400 AUTH_001 for an expired or unknown token and leaves the password alone', async () => {
    const user = await (await newOrganization(app)).user('PROVIDER')
    const token = await resetToken(user)
    await app.db
      .updateTable('password_reset_tokens')
      .set({ expires_at: sql<Date>`now() - interval '1 second'` })
      .where('user_id', '=', user.id)
      .execute()

    for (const presented of [token, 'not-a-reset-token']) {
      const response = await resetPassword(presented)
      expect(response.statusCode, presented).toBe(400)
      expect(response.json().error.code, presented).toBe('AUTH_001')
    }
    expect((await login(user.email, TEST_PASSWORD)).statusCode).toBe(200)
  })

  it('returns 422 VAL_001 naming newPassword and the rule broken, and the token stays usable', async () => {
    const user = await (await newOrganization(app)).user('PROVIDER')
    const token = await resetToken(user)
    const cases: [string, RegExp][] = [
      ['eleven char', /^newPassword must have at least 12 characters$/],
      ['x'.repeat(1025), /^newPassword must have at most 1024 characters$/],
      [user.email.toUpperCase(), /^newPassword must not be the account e-mail address$/],
    ]
    for (const [newPassword, details] of cases) {
      const response = await resetPassword(token, newPassword)
      expect(response.statusCode, newPassword).toBe(422)
      expect(response.json().error.code, newPassword).toBe('VAL_001')
      expect(response.json().error.details, newPassword).toMatch(details)
    }
    expect((await resetPassword(token)).statusCode).toBe(200)
  })

  it('lets exactly one of concurrent resets with the same token through', async () => {
    const user = await (await newOrganization(app)).user('PROVIDER')
    const token = await resetToken(user)
    const passwords = ['first new passphrase', 'second new passphrase', 'third new passphrase']
    const responses = await Promise.all(passwords.map((password) => resetPassword(token, password)))
    const statuses = responses.map((response) => response.statusCode)
    expect([...statuses].sort()).toEqual([200, 400, 400])
    const winner = passwords[statuses.indexOf(200)] as string
    expect((await login(user.email, winner)).statusCode).toBe(200)
  })

  it('ends the other reset links of the account', async () => {
    const user = await (await newOrganization(app)).user('PROVIDER')
    const first = await resetToken(user)
    const second = await resetToken(user)
    expect((await resetPassword(second)).statusCode).toBe(200)
    expect((await resetPassword(first, 'yet another passphrase')).statusCode).toBe(400)
  })
})

describe('POST /api/auth/change-password', () => {
  const change = (payload: object, headers: Record<string, string> = {}) =>
    post(app, 'change-password', payload, headers)

  it('with a bearer token changes that user’s password and ends their sessions', async () => {
    const user = await (await newOrganization(app)).user('NURSE')
    const session = await signIn(user)
    const response = await change(
      { currentPassword: TEST_PASSWORD, newPassword: NEW_PASSWORD },
      bearer(session.token),
    )
    expect(response.statusCode).toBe(200)
    expect(response.json()).toMatchObject({ success: true, data: {} })

    expect((await login(user.email, TEST_PASSWORD)).statusCode).toBe(401)
    await signIn(user, NEW_PASSWORD)
    expect((await post(app, 'refresh', { refresh_token: session.refreshToken })).statusCode).toBe(400)
    expect(await sessionsOf(user.id)).toContainEqual({ revoked_reason: 'PASSWORD_CHANGE' })
  })

  it('without a token changes the password of the username', async () => {
    const user = await (await newOrganization(app)).user('NURSE')
    const response = await change({
      username: user.email.toUpperCase(),
      currentPassword: TEST_PASSWORD,
      newPassword: NEW_PASSWORD,
    })
    expect(response.statusCode).toBe(200)
    await signIn(user, NEW_PASSWORD)
  })

  it('returns 401 AUTH_001 for a wrong current password or username, with the body of a failed login', async () => {
    const user = await (await newOrganization(app)).user('NURSE')
    const failedLogin = (await login(user.email, 'not-the-password')).json()
    const attempts = [
      change({ username: user.email, currentPassword: 'not-the-password', newPassword: NEW_PASSWORD }),
      change({ username: 'nobody@example.test', currentPassword: TEST_PASSWORD, newPassword: NEW_PASSWORD }),
      change({ currentPassword: 'not-the-password', newPassword: NEW_PASSWORD }, bearer(user.token)),
    ]
    for (const response of await Promise.all(attempts)) {
      expect(response.statusCode).toBe(401)
      expect(response.json()).toEqual(failedLogin)
    }
    expect((await login(user.email, TEST_PASSWORD)).statusCode).toBe(200)
  })

  it('checks a bearer token when one is sent, even with a correct username and password', async () => {
    const user = await (await newOrganization(app)).user('NURSE')
    const other = await (await newOrganization(app)).user('NURSE')
    const payload = { username: user.email, currentPassword: TEST_PASSWORD, newPassword: NEW_PASSWORD }

    const invalid = await change(payload, bearer('not.a.jwt'))
    expect(invalid.statusCode).toBe(401)
    expect(invalid.json().error.code).toBe('AUTH_001')
    const someoneElse = await change(payload, bearer(other.token))
    expect(someoneElse.statusCode).toBe(403)
    expect(someoneElse.json().error.code).toBe('AUTH_003')
    expect((await login(user.email, TEST_PASSWORD)).statusCode).toBe(200)
    expect((await login(other.email, TEST_PASSWORD)).statusCode).toBe(200)
  })

  it('returns 422 for a new password equal to the current one or the e-mail, or no username without a token', async () => {
    const user = await (await newOrganization(app)).user('NURSE')
    const cases: [object, string, string][] = [
      [
        { username: user.email, currentPassword: TEST_PASSWORD, newPassword: TEST_PASSWORD },
        'VAL_001',
        'newPassword must differ from the current password',
      ],
      [
        { username: user.email, currentPassword: TEST_PASSWORD, newPassword: user.email },
        'VAL_001',
        'newPassword must not be the account e-mail address',
      ],
      [
        { currentPassword: TEST_PASSWORD, newPassword: NEW_PASSWORD },
        'VAL_002',
        'username is required without a bearer token',
      ],
    ]
    for (const [payload, code, details] of cases) {
      const response = await change(payload)
      expect(response.statusCode, details).toBe(422)
      expect(response.json().error, details).toEqual({ code, details, fields: [expect.any(Object)] })
      const [{ path, message }] = response.json().error.fields
      expect(`${path} ${message}`).toBe(details)
    }
    expect((await login(user.email, TEST_PASSWORD)).statusCode).toBe(200)
  })
})

describe('temporary passwords', () => {
  it('get no tokens at login until changed without a token; then login works', async () => {
    const organization = await newOrganization(app)
    const email = `${randomUUID()}@example.test`
    const temporary = 'temporary passphrase 1'
    const user = await createUser(app.db, {
      organizationId: organization.id,
      email,
      firstName: 'Tem',
      lastName: 'Porary',
      roles: ['NURSE'],
      password: temporary,
      temporaryPassword: true,
    })
    expect(user.password_change_required).toBe(true)

    const first = await login(email, temporary)
    expect(first.statusCode).toBe(403)
    expect(first.json()).toEqual({
      success: false,
      message: 'Password change required',
      error: {
        code: 'AUTH_004',
        details: 'The password is temporary and must be changed before signing in',
      },
      data: { requiresPasswordChange: true },
    })

    const changed = await post(app, 'change-password', {
      username: email,
      currentPassword: temporary,
      newPassword: NEW_PASSWORD,
    })
    expect(changed.statusCode).toBe(200)
    const after = await login(email, NEW_PASSWORD)
    expect(after.statusCode).toBe(200)
    expect(after.json()).toMatchObject({ success: true, data: { user: { email } } })
    expect(after.json().data.token).toBeTypeOf('string')
  })
})

/** An app whose log lines are collected, parsed. */
async function appWithLog(environment: Record<string, string>) {
  const lines: Record<string, unknown>[] = []
  const raw: string[] = []
  const logged = await buildTestApp({ LOG_LEVEL: 'info', ...environment }, undefined, {
    logStream: {
      write(line: string) {
        raw.push(line)
        lines.push(JSON.parse(line))
      },
    },
  })
  return { app: logged, lines, raw }
}

describe('mail without SMTP_URL (MAIL_TRANSPORT=log)', () => {
  let logged: Awaited<ReturnType<typeof appWithLog>>

  beforeAll(async () => {
    logged = await appWithLog({ LOG_LEVEL: 'debug' })
  })
  afterAll(async () => {
    await logged.app.close()
  })

  it('logs that a mail was due to a masked address at info, and the link only at debug', async () => {
    const user = await (await newOrganization(logged.app)).user('PROVIDER')
    expect((await post(logged.app, 'forgot-password', { email: user.email })).statusCode).toBe(200)
    await logged.app.background.settled()

    const entries = logged.lines.filter((line) => line.mail !== undefined) as {
      level: number
      mail: { to: string; subject?: string; links?: string[] }
    }[]
    expect(entries.map((entry) => entry.level)).toEqual([30, 20])
    expect(entries[0]?.mail).toEqual({
      to: `${user.email[0]}***@example.test`,
      subject: 'Reset your EHR password',
    })
    expect(entries[1]?.mail).toEqual({
      to: `${user.email[0]}***@example.test`,
      links: [expect.stringMatching(/^http:\/\/localhost:8080\/reset-password\?token=[\w-]{43}$/)],
    })
    // Nothing at info or above holds the token or the address.
    const token = new URL(entries[1]?.mail.links?.[0] as string).searchParams.get('token') ?? ''
    const visible = logged.raw.filter((line) => JSON.parse(line).level >= 30).join('')
    expect(visible).not.toContain(token)
    expect(visible).not.toContain(user.email)
    const response = await post(logged.app, 'reset-password', { token, newPassword: NEW_PASSWORD })
    expect(response.statusCode).toBe(200)
  })
})

describe('a mail server that refuses the mail', () => {
  const smtpPassword = 'smtp-secret-Xq7'
  let refusing: Awaited<ReturnType<typeof startSmtpServer>>
  let logged: Awaited<ReturnType<typeof appWithLog>>

  beforeAll(async () => {
    refusing = await startSmtpServer({ rejectRecipients: true })
    logged = await appWithLog({ SMTP_URL: `smtp://mailer:${smtpPassword}@127.0.0.1:${refusing.port}` })
  })
  afterAll(async () => {
    await logged.app.close()
    await refusing.close()
  })

  it('still answers 200, and logs the failure without the address or the SMTP credentials', async () => {
    const user = await (await newOrganization(logged.app)).user('PROVIDER')
    const response = await post(logged.app, 'forgot-password', { email: user.email })
    expect(response.statusCode).toBe(200)
    await logged.app.background.settled()

    expect(refusing.rejected).toEqual([user.email])
    const failures = logged.lines.filter((line) => line.msg === 'background task failed')
    expect(failures).toHaveLength(1)
    expect(failures[0]).toMatchObject({ level: 50, task: 'password reset mail', err: { code: 'EENVELOPE' } })
    const everything = logged.raw.join('')
    expect(everything).not.toContain(user.email)
    expect(everything).not.toContain(smtpPassword)
  })
})
