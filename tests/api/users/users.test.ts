import { randomUUID } from 'node:crypto'
import { decodeJwt } from 'jose'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ROLE_NAMES } from '../../../schemas/users.js'
import { ROLES, type Role } from '../../../src/access/roles.js'
import type { App } from '../../../src/app.js'
import { createClient } from '../../../src/modules/clients/service.js'
import { createUser } from '../../../src/modules/users/service.js'
import { buildTestApp } from '../../helpers/app.js'
import {
  type ExternalPractice,
  externalPerson,
  startExternalPractice,
} from '../../helpers/external-practice.js'
import {
  bearer,
  newOrganization,
  TEST_PASSWORD,
  type TestOrganization,
  type TestUser,
  tokenFor,
} from '../../helpers/factories.js'
import { expectSameAndEmptyPatchChangeNothing } from '../../helpers/no-op-writes.js'
import type { OidcTestUser } from '../../helpers/servers/oidc-provider.js'
import { mailText, startSmtpServer } from '../../helpers/servers/smtp-server.js'

const RESET_PAGE = 'https://ehr.example.test/account/reset'
const NEW_PASSWORD = 'a freshly chosen passphrase'

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

type Method = 'GET' | 'POST' | 'PUT' | 'PATCH'

const call = (user: TestUser, method: Method, url: string, payload?: object) =>
  app.inject({ method, url, headers: bearer(user.token), ...(payload ? { payload } : {}) })

const login = (username: string, password: string) =>
  app.inject({ method: 'POST', url: '/api/auth/login', payload: { username, password } })

const refresh = (refreshToken: string) =>
  app.inject({ method: 'POST', url: '/api/auth/refresh', payload: { refreshToken } })

const uniqueEmail = (name = 'person') => `${name}.${randomUUID().slice(0, 8)}@example.test`

const newUserBody = (overrides: Record<string, unknown> = {}) => ({
  email: uniqueEmail(),
  firstName: 'Mary',
  lastName: 'Seacole',
  roles: ['NURSE'],
  invite: 'temporaryPassword',
  ...overrides,
})

/** Creates an account through the API as `admin`; returns the response data. */
async function created(admin: TestUser, overrides: Record<string, unknown> = {}) {
  const response = await call(admin, 'POST', '/api/users', newUserBody(overrides))
  expect(response.statusCode, response.body).toBe(201)
  return response.json().data as { id: number; email: string; temporaryPassword: string | null }
}

/** Mails sent by the requests since `before`, once the work they started has settled. */
async function mailsSince(before: number) {
  await app.background.settled()
  return smtp.received.slice(before)
}

function linkToken(mail: Parameters<typeof mailText>[0]): string {
  const link = new URL(mailText(mail).match(/https:\/\/\S+/)?.[0] ?? '')
  return link.searchParams.get('token') ?? ''
}

/** The organization's ADMIN signed in, plus a fresh organization for the test. */
async function adminOfNewOrganization(): Promise<{ org: TestOrganization; admin: TestUser }> {
  const org = await newOrganization(app)
  return { org, admin: await org.user('ADMIN') }
}

describe('the role lists', () => {
  it('names in the schema exactly the roles the access layer knows', () => {
    expect([...ROLE_NAMES]).toEqual([...ROLES])
  })
})

describe('GET /api/users', () => {
  it('returns 200 with a page of the organization’s people only: no service accounts, no other organization', async () => {
    const { org, admin } = await adminOfNewOrganization()
    const nurse = await org.user('NURSE')
    await createClient(app.db, {
      organizationId: org.id,
      clientId: `sync-${randomUUID().slice(0, 8)}`,
      name: 'Sync',
      roles: ['ADMIN'],
    })
    await (await newOrganization(app)).user('ADMIN')

    const response = await call(admin, 'GET', '/api/users?sort=email,asc')
    expect(response.statusCode).toBe(200)
    const page = response.json().data
    expect(page).toMatchObject({
      pageable: { pageNumber: 0, pageSize: 20 },
      totalElements: 2,
      first: true,
      last: true,
    })
    expect(page.content.map((user: { id: number }) => user.id).sort()).toEqual([admin.id, nurse.id].sort())
    expect(page.content[0]).toEqual({
      id: expect.any(Number),
      email: expect.any(String),
      firstName: 'Test',
      lastName: 'User',
      roles: expect.any(Array),
      active: true,
      passwordChangeRequired: false,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    })
    expect(response.body).not.toMatch(/password_hash|passwordHash|scrypt/)
  })

  it('filters by role, active and q (e-mail or names, case-insensitive), and pages', async () => {
    const { org, admin } = await adminOfNewOrganization()
    const ada = await created(admin, { firstName: 'Ada', lastName: 'Lovelace', roles: ['PROVIDER'] })
    const grace = await created(admin, {
      email: uniqueEmail('grace.hopper'),
      firstName: 'Grace',
      lastName: 'Hopper',
      roles: ['PROVIDER', 'NURSE'],
    })
    const billing = await org.user('BILLING')
    expect((await call(admin, 'POST', `/api/users/${billing.id}/deactivate`)).statusCode).toBe(200)

    const ids = async (query: string) => {
      const response = await call(admin, 'GET', `/api/users?${query}`)
      expect(response.statusCode, response.body).toBe(200)
      return response.json().data.content.map((user: { id: number }) => user.id)
    }
    expect(await ids('role=PROVIDER&sort=lastName,asc')).toEqual([grace.id, ada.id])
    expect(await ids('role=NURSE')).toEqual([grace.id])
    expect(await ids('active=false')).toEqual([billing.id])
    expect((await ids('active=true')).sort()).toEqual([admin.id, ada.id, grace.id].sort())
    expect(await ids('q=LOVELACE')).toEqual([ada.id])
    expect(await ids('q=ada%20love')).toEqual([ada.id])
    expect(await ids('q=GRACE.HOPPER')).toEqual([grace.id])
    // Parameterised, and LIKE's wildcards are taken literally.
    expect(await ids('q=%25')).toEqual([])
    expect(await ids('q=_')).toEqual([])
    expect(await ids(`q=${encodeURIComponent("' or 1=1 --")}`)).toEqual([])

    const paged = await call(admin, 'GET', '/api/users?size=2&page=1&sort=firstName,desc')
    expect(paged.json().data).toMatchObject({ totalElements: 4, totalPages: 2, first: false, last: true })
    expect(paged.json().data.content.map((user: { firstName: string }) => user.firstName)).toEqual([
      'Grace',
      'Ada',
    ])
  })

  it.each([
    ['an unknown parameter', 'name=x'],
    ['a page size over 100', 'size=101'],
    ['an unknown role', 'role=ROOT'],
    ['an unknown sort field', 'sort=password,asc'],
    ['a non-boolean active', 'active=maybe'],
    ['sync paging, which this list has not', 'updatedSince=2026-01-01T00:00:00Z'],
  ])('returns 400 for %s', async (_case, query) => {
    const { admin } = await adminOfNewOrganization()
    const response = await call(admin, 'GET', `/api/users?${query}`)
    expect(response.statusCode).toBe(400)
    expect(response.json()).toMatchObject({
      success: false,
      error: { code: expect.stringMatching(/^VAL_00[12]$/) },
    })
  })
})

describe('GET /api/users/{id}', () => {
  it('returns 200 with the account', async () => {
    const { org, admin } = await adminOfNewOrganization()
    const nurse = await org.user('NURSE')
    const response = await call(admin, 'GET', `/api/users/${nurse.id}`)
    expect(response.statusCode).toBe(200)
    expect(response.json().data).toMatchObject({
      id: nurse.id,
      email: nurse.email,
      roles: ['NURSE'],
      active: true,
    })
  })

  it('returns 403 AUTH_003 for another organization’s account and 404 RES_001 for none', async () => {
    const { admin } = await adminOfNewOrganization()
    const other = await (await newOrganization(app)).user('NURSE')
    const foreign = await call(admin, 'GET', `/api/users/${other.id}`)
    expect(foreign.statusCode).toBe(403)
    expect(foreign.json()).toMatchObject({ success: false, error: { code: 'AUTH_003' } })
    expect(foreign.body).not.toContain(other.email)
    const missing = await call(admin, 'GET', '/api/users/2000000000')
    expect(missing.statusCode).toBe(404)
    expect(missing.json()).toMatchObject({ success: false, error: { code: 'RES_001' } })
  })

  it('returns 404 for a service account of the organization: those are managed as clients', async () => {
    const { org, admin } = await adminOfNewOrganization()
    const client = await createClient(app.db, {
      organizationId: org.id,
      clientId: `svc-${randomUUID().slice(0, 8)}`,
      name: 'Sync',
      roles: ['BILLING'],
    })
    expect((await call(admin, 'GET', `/api/users/${client.userId}`)).statusCode).toBe(404)
    expect((await call(admin, 'POST', `/api/users/${client.userId}/deactivate`)).statusCode).toBe(404)
  })

  it.each([
    ['a non-numeric id', 'abc'],
    ['a zero id', '0'],
    ['an id past the integer range', '99999999999'],
  ])('returns 400 for %s', async (_case, id) => {
    const { admin } = await adminOfNewOrganization()
    const response = await call(admin, 'GET', `/api/users/${id}`)
    expect(response.statusCode).toBe(400)
    expect(response.json().success).toBe(false)
  })
})

describe('POST /api/users', () => {
  it('returns 201 and mails an invitation link with which the person chooses a password and signs in', async () => {
    const { admin } = await adminOfNewOrganization()
    const email = uniqueEmail('invited')
    const before = smtp.received.length
    const response = await call(admin, 'POST', '/api/users', newUserBody({ email, invite: 'email' }))
    expect(response.statusCode).toBe(201)
    expect(response.json().data).toMatchObject({
      email,
      roles: ['NURSE'],
      active: true,
      passwordChangeRequired: true,
      temporaryPassword: null,
    })
    const mails = await mailsSince(before)
    expect(mails.map((mail) => mail.to)).toEqual([[email]])
    const mail = mails[0] as (typeof mails)[number]
    expect(mailText(mail)).toContain(RESET_PAGE)

    const reset = await app.inject({
      method: 'POST',
      url: '/api/auth/reset-password',
      payload: { token: linkToken(mail), newPassword: NEW_PASSWORD },
    })
    expect(reset.statusCode, reset.body).toBe(200)
    const signedIn = await login(email, NEW_PASSWORD)
    expect(signedIn.statusCode).toBe(200)
    expect(signedIn.json()).toMatchObject({ success: true, data: { user: { email, role: 'NURSE' } } })
  })

  it('returns 201 with a temporary password, once, that must be changed before signing in', async () => {
    const { admin } = await adminOfNewOrganization()
    const before = smtp.received.length
    const user = await created(admin, { invite: 'temporaryPassword', roles: ['FRONT_DESK', 'BILLING'] })
    expect(user.temporaryPassword).toMatch(/^[A-Za-z0-9_-]{24}$/)
    expect(await mailsSince(before)).toEqual([])

    const first = await login(user.email, user.temporaryPassword as string)
    expect(first.statusCode).toBe(403)
    expect(first.json()).toMatchObject({
      success: false,
      error: { code: 'AUTH_004' },
      data: { requiresPasswordChange: true },
    })
    const change = await app.inject({
      method: 'POST',
      url: '/api/auth/change-password',
      payload: { username: user.email, currentPassword: user.temporaryPassword, newPassword: NEW_PASSWORD },
    })
    expect(change.statusCode, change.body).toBe(200)
    const signedIn = await login(user.email, NEW_PASSWORD)
    expect(signedIn.json()).toMatchObject({ success: true, data: { user: { role: 'FRONT_DESK' } } })

    const read = await call(admin, 'GET', `/api/users/${user.id}`)
    expect(read.json().data).toMatchObject({ passwordChangeRequired: false })
    expect(read.body).not.toContain('temporaryPassword')
    expect(read.body).not.toContain(user.temporaryPassword)
  })

  it('stores only a hash of the temporary password', async () => {
    const { admin } = await adminOfNewOrganization()
    const user = await created(admin)
    const row = await app.db
      .selectFrom('users')
      .select(['password_hash', 'organization_id', 'kind'])
      .where('id', '=', user.id)
      .executeTakeFirstOrThrow()
    expect(row.password_hash).toMatch(/^scrypt\$/)
    expect(row.password_hash).not.toContain(user.temporaryPassword)
    expect(row).toMatchObject({ organization_id: admin.organizationId, kind: 'PERSON' })
  })

  it('returns 409 RES_002 for an e-mail address already used, in any case and in any organization', async () => {
    const { admin } = await adminOfNewOrganization()
    const other = await (await newOrganization(app)).user('NURSE')
    const first = await created(admin)
    for (const email of [first.email.toUpperCase(), other.email]) {
      const response = await call(admin, 'POST', '/api/users', newUserBody({ email }))
      expect(response.statusCode).toBe(409)
      expect(response.json()).toMatchObject({
        success: false,
        error: { code: 'RES_002', details: 'An account with this e-mail address already exists' },
      })
    }
  })

  it.each([
    ['an unknown field', { password: 'chosen-by-admin-1' }],
    ['an unknown role', { roles: ['ROOT'] }],
    ['no role', { roles: [] }],
    ['a role twice', { roles: ['NURSE', 'NURSE'] }],
    ['an unknown invitation mode', { invite: 'sms' }],
    ['no invitation mode', { invite: undefined }],
    ['an address that is not one', { email: 'not-an-address' }],
    ['a blank first name', { firstName: '   ' }],
    ['no e-mail', { email: undefined }],
  ])('returns 422 for %s, creating nothing', async (_case, overrides) => {
    const { admin } = await adminOfNewOrganization()
    const response = await call(admin, 'POST', '/api/users', newUserBody(overrides))
    expect(response.statusCode, response.body).toBe(422)
    expect(response.json()).toMatchObject({
      success: false,
      error: { code: expect.stringMatching(/^VAL_00[12]$/) },
    })
    const list = await call(admin, 'GET', '/api/users')
    expect(list.json().data.totalElements).toBe(1)
  })

  it('returns 400 for malformed JSON', async () => {
    const { admin } = await adminOfNewOrganization()
    const response = await app.inject({
      method: 'POST',
      url: '/api/users',
      headers: { ...bearer(admin.token), 'content-type': 'application/json' },
      payload: '{"email":',
    })
    expect(response.statusCode).toBe(400)
    expect(response.json()).toMatchObject({ success: false, error: { code: 'VAL_001' } })
  })
})

describe('PUT and PATCH /api/users/{id}', () => {
  it('returns 200 with the account as it was, updatedAt included, for the same values or an empty patch', async () => {
    const { org, admin } = await adminOfNewOrganization()
    const nurse = await org.user('NURSE')
    const url = `/api/users/${nurse.id}`
    const read = () => call(admin, 'GET', url)
    const same = { firstName: 'Test', lastName: 'User', roles: ['NURSE'] }
    await expectSameAndEmptyPatchChangeNothing(app, org.id, admin, url, same)
    const before = (await read()).json().data.updatedAt
    const changed = await call(admin, 'PUT', url, { ...same, lastName: 'Seacole' })
    expect(changed.statusCode, changed.body).toBe(200)
    expect(changed.json().data.updatedAt > before).toBe(true)
  })

  it('PUT returns 200 and replaces names and roles, which the next token carries', async () => {
    const { org, admin } = await adminOfNewOrganization()
    const nurse = await org.user('NURSE')
    const response = await call(admin, 'PUT', `/api/users/${nurse.id}`, {
      firstName: 'Florence',
      lastName: 'Nightingale',
      roles: ['NURSE', 'ADMIN'],
    })
    expect(response.statusCode).toBe(200)
    expect(response.json().data).toMatchObject({
      firstName: 'Florence',
      lastName: 'Nightingale',
      roles: ['NURSE', 'ADMIN'],
      email: nurse.email,
    })
    const signedIn = await login(nurse.email, TEST_PASSWORD)
    expect(decodeJwt(signedIn.json().data.token)).toMatchObject({
      realm_access: { roles: ['NURSE', 'ADMIN'] },
      given_name: 'Florence',
    })
  })

  it('PATCH returns 200 and changes only the members sent; roles replace the list', async () => {
    const { admin } = await adminOfNewOrganization()
    const user = await created(admin, { roles: ['NURSE', 'FRONT_DESK'] })
    const renamed = await app.inject({
      method: 'PATCH',
      url: `/api/users/${user.id}`,
      headers: { ...bearer(admin.token), 'content-type': 'application/merge-patch+json' },
      payload: JSON.stringify({ firstName: 'Mother' }),
    })
    expect(renamed.statusCode, renamed.body).toBe(200)
    expect(renamed.json().data).toMatchObject({
      firstName: 'Mother',
      lastName: 'Seacole',
      roles: ['NURSE', 'FRONT_DESK'],
    })
    const reroled = await call(admin, 'PATCH', `/api/users/${user.id}`, { roles: ['BILLING'] })
    expect(reroled.json().data).toMatchObject({ firstName: 'Mother', roles: ['BILLING'] })
  })

  it.each([
    ['PUT', 'a missing member', { firstName: 'A', roles: ['NURSE'] }],
    [
      'PUT',
      'the e-mail address',
      { firstName: 'A', lastName: 'B', roles: ['NURSE'], email: 'x@example.test' },
    ],
    ['PATCH', 'the e-mail address', { email: 'x@example.test' }],
    ['PATCH', 'a null required member', { lastName: null }],
    ['PATCH', 'no roles', { roles: [] }],
    ['PATCH', 'the active flag', { active: false }],
  ] as const)('%s returns 422 for %s, changing nothing', async (method, _case, payload) => {
    const { admin } = await adminOfNewOrganization()
    const user = await created(admin)
    const before = (await call(admin, 'GET', `/api/users/${user.id}`)).body
    const response = await call(admin, method, `/api/users/${user.id}`, payload)
    expect(response.statusCode, response.body).toBe(422)
    expect(response.json().success).toBe(false)
    expect((await call(admin, 'GET', `/api/users/${user.id}`)).body).toBe(before)
  })

  it('returns 409 RES_002 when an administrator removes their own ADMIN role, and keeps it', async () => {
    const { org, admin } = await adminOfNewOrganization()
    await org.user('ADMIN')
    for (const [method, payload] of [
      ['PUT', { firstName: 'Test', lastName: 'User', roles: ['PROVIDER'] }],
      ['PATCH', { roles: ['PROVIDER'] }],
    ] as const) {
      const response = await call(admin, method, `/api/users/${admin.id}`, payload)
      expect(response.statusCode).toBe(409)
      expect(response.json()).toMatchObject({
        success: false,
        error: {
          code: 'RES_002',
          details: 'You cannot remove your own ADMIN role; another administrator can',
        },
      })
    }
    const own = await call(admin, 'PATCH', `/api/users/${admin.id}`, {
      firstName: 'Still',
      roles: ['ADMIN', 'NURSE'],
    })
    expect(own.statusCode).toBe(200)
    expect(own.json().data).toMatchObject({ firstName: 'Still', roles: ['ADMIN', 'NURSE'] })
  })

  it('returns 409 RES_002 when the change would leave the organization without an active ADMIN', async () => {
    const { org, admin } = await adminOfNewOrganization()
    const second = await org.user('ADMIN')
    // The first administrator demotes the second, whose account was read moments before: for as long
    // as that read is cached (30 s) the second's tokens still act as ADMIN.
    expect((await call(second, 'GET', '/api/users')).statusCode).toBe(200)
    const demoted = await call(admin, 'PATCH', `/api/users/${second.id}`, { roles: ['NURSE'] })
    expect(demoted.statusCode).toBe(200)

    const lastAdmin = `User ${admin.id} is the last active ADMIN of the organization; give another account the ADMIN role first`
    const removal = await call(second, 'PUT', `/api/users/${admin.id}`, {
      firstName: 'Test',
      lastName: 'User',
      roles: ['NURSE'],
    })
    expect(removal.statusCode).toBe(409)
    expect(removal.json()).toMatchObject({ success: false, error: { code: 'RES_002', details: lastAdmin } })
    const deactivation = await call(second, 'POST', `/api/users/${admin.id}/deactivate`)
    expect(deactivation.statusCode).toBe(409)
    expect(deactivation.json()).toMatchObject({
      success: false,
      error: { code: 'RES_002', details: lastAdmin },
    })
    const read = await call(admin, 'GET', `/api/users/${admin.id}`)
    expect(read.json().data).toMatchObject({ roles: ['ADMIN'], active: true })

    // With another active ADMIN the same change goes through.
    await call(admin, 'PATCH', `/api/users/${second.id}`, { roles: ['ADMIN'] })
    expect((await call(second, 'POST', `/api/users/${admin.id}/deactivate`)).statusCode).toBe(200)
  })

  it('counts only active administrators as the one that remains', async () => {
    const { org, admin } = await adminOfNewOrganization()
    const inactive = await org.user('ADMIN')
    const other = await org.user('ADMIN')
    expect((await call(admin, 'POST', `/api/users/${inactive.id}/deactivate`)).statusCode).toBe(200)
    // Read (and cached) before the demotion, so the next call still acts as ADMIN.
    expect((await call(other, 'GET', '/api/users')).statusCode).toBe(200)
    expect((await call(admin, 'PATCH', `/api/users/${other.id}`, { roles: ['NURSE'] })).statusCode).toBe(200)
    const response = await call(other, 'PATCH', `/api/users/${admin.id}`, { roles: ['NURSE'] })
    expect(response.statusCode).toBe(409)
  })
})

describe('POST /api/users/{id}/deactivate and /reactivate', () => {
  it('deactivation ends every session at once: no refresh, no sign-in, no new access token; reactivation allows sign-in again', async () => {
    const { org, admin } = await adminOfNewOrganization()
    const nurse = await org.user('NURSE')
    const first = (await login(nurse.email, TEST_PASSWORD)).json().data
    const second = (await login(nurse.email, TEST_PASSWORD)).json().data
    const unusedToken = tokenFor(app, nurse)

    const response = await call(admin, 'POST', `/api/users/${nurse.id}/deactivate`)
    expect(response.statusCode).toBe(200)
    expect(response.json().data).toMatchObject({ id: nurse.id, active: false })

    for (const session of [first, second]) {
      const refused = await refresh(session.refreshToken)
      expect(refused.statusCode).toBe(400)
      expect(refused.json()).toMatchObject({ success: false, error: { code: 'AUTH_001' } })
    }
    const sessions = await app.db
      .selectFrom('sessions')
      .select(['revoked_at', 'revoked_reason'])
      .where('user_id', '=', nurse.id)
      .execute()
    expect(sessions).toHaveLength(2)
    expect(
      sessions.every((session) => session.revoked_at !== null && session.revoked_reason === 'DEACTIVATED'),
    ).toBe(true)
    const signIn = await login(nurse.email, TEST_PASSWORD)
    expect(signIn.statusCode).toBe(401)
    expect((await app.inject({ url: '/api/auth/me', headers: bearer(unusedToken) })).statusCode).toBe(401)

    const again = await call(admin, 'POST', `/api/users/${nurse.id}/deactivate`)
    expect(again.statusCode).toBe(200)

    const reactivated = await call(admin, 'POST', `/api/users/${nurse.id}/reactivate`)
    expect(reactivated.statusCode).toBe(200)
    expect(reactivated.json().data).toMatchObject({ active: true })
    expect((await refresh(first.refreshToken)).statusCode).toBe(400)
    expect((await login(nurse.email, TEST_PASSWORD)).statusCode).toBe(200)
  })

  it('returns 409 RES_002 for the caller’s own account', async () => {
    const { org, admin } = await adminOfNewOrganization()
    await org.user('ADMIN')
    const response = await call(admin, 'POST', `/api/users/${admin.id}/deactivate`)
    expect(response.statusCode).toBe(409)
    expect(response.json()).toMatchObject({
      success: false,
      error: {
        code: 'RES_002',
        details: 'You cannot deactivate your own account; another administrator can',
      },
    })
    expect((await call(admin, 'GET', `/api/users/${admin.id}`)).json().data.active).toBe(true)
  })

  it('returns 403 and 404 for another organization’s account and a missing one, changing nothing', async () => {
    const { admin } = await adminOfNewOrganization()
    const other = await (await newOrganization(app)).user('NURSE')
    for (const action of ['deactivate', 'reactivate', 'reset-password']) {
      expect((await call(admin, 'POST', `/api/users/${other.id}/${action}`)).statusCode).toBe(403)
      expect((await call(admin, 'POST', `/api/users/2000000000/${action}`)).statusCode).toBe(404)
    }
    expect((await login(other.email, TEST_PASSWORD)).statusCode).toBe(200)
  })
})

describe('POST /api/users/{id}/reset-password', () => {
  it('returns 200 and mails the account a reset link; the current password keeps working until it is used', async () => {
    const { org, admin } = await adminOfNewOrganization()
    const nurse = await org.user('NURSE')
    const before = smtp.received.length
    const response = await call(admin, 'POST', `/api/users/${nurse.id}/reset-password`)
    expect(response.statusCode).toBe(200)
    expect(response.json().data).toMatchObject({ id: nurse.id })
    const mails = await mailsSince(before)
    expect(mails.map((mail) => mail.to)).toEqual([[nurse.email]])
    expect((await login(nurse.email, TEST_PASSWORD)).statusCode).toBe(200)
    const reset = await app.inject({
      method: 'POST',
      url: '/api/auth/reset-password',
      payload: { token: linkToken(mails[0] as (typeof mails)[number]), newPassword: NEW_PASSWORD },
    })
    expect(reset.statusCode).toBe(200)
    expect((await login(nurse.email, TEST_PASSWORD)).statusCode).toBe(401)
    expect((await login(nurse.email, NEW_PASSWORD)).statusCode).toBe(200)
  })

  it('returns 409 RES_002 for a deactivated account, mailing nothing', async () => {
    const { org, admin } = await adminOfNewOrganization()
    const nurse = await org.user('NURSE')
    await call(admin, 'POST', `/api/users/${nurse.id}/deactivate`)
    const before = smtp.received.length
    const response = await call(admin, 'POST', `/api/users/${nurse.id}/reset-password`)
    expect(response.statusCode).toBe(409)
    expect(response.json()).toMatchObject({
      error: { code: 'RES_002', details: 'The account is deactivated; reactivate it first' },
    })
    expect(await mailsSince(before)).toEqual([])
  })
})

describe('who may manage accounts', () => {
  const routes: [Method, string, object?][] = [
    ['GET', '/api/users'],
    ['GET', '/api/users/{id}'],
    ['POST', '/api/users', newUserBody()],
    ['PUT', '/api/users/{id}', { firstName: 'A', lastName: 'B', roles: ['NURSE'] }],
    ['PATCH', '/api/users/{id}', { firstName: 'A' }],
    ['POST', '/api/users/{id}/deactivate'],
    ['POST', '/api/users/{id}/reactivate'],
    ['POST', '/api/users/{id}/reset-password'],
  ]
  const others = ROLES.filter((role) => role !== 'ADMIN')

  it.each(others)('refuses every users route to %s with 403 AUTH_003, changing nothing', async (role) => {
    const { org, admin } = await adminOfNewOrganization()
    const caller = await org.user(role as Role)
    const target = await org.user('NURSE')
    const before = (await call(admin, 'GET', `/api/users/${target.id}`)).body
    for (const [method, path, payload] of routes) {
      const response = await call(caller, method, path.replace('{id}', String(target.id)), payload)
      expect(response.statusCode, `${method} ${path}`).toBe(403)
      expect(response.json()).toMatchObject({ success: false, error: { code: 'AUTH_003' } })
    }
    expect((await call(admin, 'GET', `/api/users/${target.id}`)).body).toBe(before)
    expect((await call(admin, 'GET', '/api/users')).json().data.totalElements).toBe(3)
  })
})

describe('audit trail', () => {
  it('records every users call with the ids of the accounts', async () => {
    const { org, admin } = await adminOfNewOrganization()
    const nurse = await org.user('NURSE')
    const user = await created(admin)
    await call(admin, 'GET', `/api/users/${nurse.id}`)
    await call(admin, 'PATCH', `/api/users/${nurse.id}`, { firstName: 'Audited' })
    await call(admin, 'POST', `/api/users/${nurse.id}/deactivate`)
    await call(admin, 'GET', '/api/users?active=false')
    await app.auditLog.flush()
    const rows = await app.db
      .selectFrom('audit_log')
      .select(['action', 'outcome', 'resource_ids', 'user_id'])
      .where('organization_id', '=', org.id)
      .where('resource_type', '=', 'user')
      .orderBy('id')
      .execute()
    expect(rows.map((row) => [row.action, row.outcome, row.resource_ids, row.user_id])).toEqual([
      ['CREATE', 'SUCCESS', [user.id], admin.id],
      ['READ', 'SUCCESS', [nurse.id], admin.id],
      ['UPDATE', 'SUCCESS', [nurse.id], admin.id],
      ['UPDATE', 'SUCCESS', [nurse.id], admin.id],
      ['LIST', 'SUCCESS', [nurse.id], admin.id],
    ])
  })
})

describe('with an external identity provider', () => {
  const groupPath = `/practices/${randomUUID()}`
  const boss = externalPerson(groupPath, 'boss', ['ADMIN'])
  const staff = externalPerson(groupPath, 'staff', ['NURSE'])
  let practice: ExternalPractice
  let external: App

  beforeAll(async () => {
    practice = await startExternalPractice(groupPath, [boss, staff])
    external = practice.app
    // Known here before their first sign-in, as `npm run user -- create --subject` does it: a
    // subject seen at sign-in would be in the account cache, which notices a deactivation only
    // after its interval (30 seconds).
    await createUser(external.db, {
      organizationId: practice.organizationId,
      email: staff.email,
      firstName: 'staff',
      lastName: 'Tester',
      roles: ['NURSE'],
      subject: staff.subject,
    })
  })
  afterAll(async () => {
    await practice?.close()
  })

  const signIn = (user: OidcTestUser) =>
    external.inject({
      method: 'POST',
      url: '/api/auth/login',
      payload: { username: user.username, password: user.password },
    })

  it('lists and deactivates the accounts known here; creating, changing and resetting answer 409 RES_002', async () => {
    const token = (await signIn(boss)).json().data.token as string
    const as = (method: Method, url: string, payload?: object) =>
      external.inject({ method, url, headers: bearer(token), ...(payload ? { payload } : {}) })

    const list = await as('GET', '/api/users?sort=email,asc')
    expect(list.statusCode).toBe(200)
    const accounts = list.json().data.content as { id: number; email: string }[]
    expect(accounts.map((account) => account.email)).toEqual([boss.email, staff.email])
    const staffId = (accounts[1] as { id: number }).id

    const refusals: [Method, string, object?][] = [
      ['POST', '/api/users', newUserBody()],
      ['PUT', `/api/users/${staffId}`, { firstName: 'A', lastName: 'B', roles: ['NURSE'] }],
      ['PATCH', `/api/users/${staffId}`, { roles: ['ADMIN'] }],
      ['POST', `/api/users/${staffId}/reset-password`],
    ]
    for (const [method, url, payload] of refusals) {
      const response = await as(method, url, payload)
      expect(response.statusCode, `${method} ${url}`).toBe(409)
      expect(response.json()).toMatchObject({
        success: false,
        error: { code: 'RES_002', details: expect.stringContaining('external identity provider') },
      })
    }

    const deactivated = await as('POST', `/api/users/${staffId}/deactivate`)
    expect(deactivated.statusCode).toBe(200)
    expect(deactivated.json().data).toMatchObject({ active: false })
    const refused = await signIn(staff)
    expect(refused.statusCode).toBe(401)
    expect(refused.json()).toMatchObject({ success: false, error: { code: 'AUTH_001' } })

    // Signing in again would wait for the account cache's interval: the refusal above is cached.
    const reactivated = await as('POST', `/api/users/${staffId}/reactivate`)
    expect(reactivated.statusCode).toBe(200)
    expect(reactivated.json().data).toMatchObject({ active: true })
  })
})
