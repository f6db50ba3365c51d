import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { refreshSession, startSession } from '../../../src/identity/sessions.js'
import { recordGrant } from '../../../src/modules/smart-apps/service.js'
import { buildTestApp } from '../../helpers/app.js'
import { bearer, newOrganization, type TestOrganization, type TestUser } from '../../helpers/factories.js'
import { type CreatedApp, callAs, publicAppBody, registeredApp } from './smart-apps.js'

// A revoked session's access tokens stop within this (src/identity/revoked-sessions.ts polls every 2 s).
const REVOCATION_MS = 5000

let app: App

beforeAll(async () => {
  app = await buildTestApp()
})
afterAll(async () => {
  await app.close()
})

const call = (user: TestUser, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: object) =>
  callAs(app, user, method, url, payload)

interface Practice {
  org: TestOrganization
  admin: TestUser
  smartApp: CreatedApp
}

async function newPractice(): Promise<Practice> {
  const org = await newOrganization(app)
  const admin = await org.user('ADMIN')
  return { org, admin, smartApp: await registeredApp(app, admin) }
}

const grant = (
  org: TestOrganization,
  userId: number,
  appId: number,
  scopes = ['launch', 'patient/Patient.rs'],
) =>
  app.db.transaction().execute((trx) => recordGrant(trx, { organizationId: org.id, userId, appId, scopes }))

function issuer() {
  if (!app.tokenIssuer) throw new Error('The app under test is not its own issuer')
  return app.tokenIssuer
}

/** A session of the app's, under the grant, opened as the lead's token endpoint will open one. */
async function appSession(user: TestUser, clientId: string, grantId: number) {
  const tokens = await startSession(app.db, issuer(), user.id, clientId, ['offline_access'])
  await app.db
    .updateTable('sessions')
    .set({ app_grant_id: grantId })
    .where('id', '=', tokens.sessionId)
    .execute()
  return tokens
}

// An app's token reaches the FHIR API only; what it reads there tells whether it still works.
const me = (token: string) => app.inject({ url: '/fhir/R4/Patient?_count=1', headers: bearer(token) })

const standingOf = async (userId: number) =>
  (
    await app.db
      .selectFrom('app_grants')
      .select('id')
      .where('user_id', '=', userId)
      .where('revoked_at', 'is', null)
      .execute()
  ).map((row) => row.id)

describe('GET /api/me/app-grants', () => {
  it('lists the caller’s own standing grants with the app’s name and client id', async () => {
    const { org, smartApp } = await newPractice()
    const nurse = await org.user('NURSE')
    const patient = await org.user('PATIENT')
    const mine = await grant(org, nurse.id, smartApp.id)
    await grant(org, patient.id, smartApp.id)

    const response = await call(nurse, 'GET', '/api/me/app-grants')
    expect(response.statusCode, response.body).toBe(200)
    expect(response.json().data).toMatchObject({ totalElements: 1, first: true, last: true })
    expect(response.json().data.content).toEqual([
      {
        id: mine,
        userId: nurse.id,
        appId: smartApp.id,
        appName: 'Growth charts',
        clientId: smartApp.clientId,
        scopes: ['launch', 'patient/Patient.rs'],
        createdAt: expect.any(String),
        revokedAt: null,
      },
    ])
    // A patient's own account sees its grants too.
    const own = await call(patient, 'GET', '/api/me/app-grants')
    expect(own.statusCode).toBe(200)
    expect(own.json().data.totalElements).toBe(1)
  })

  it('refuses a token issued to an app (403): a user manages their grants themselves', async () => {
    const { org, smartApp } = await newPractice()
    const nurse = await org.user('NURSE')
    const tokens = await appSession(nurse, smartApp.clientId, await grant(org, nurse.id, smartApp.id))
    const response = await app.inject({ url: '/api/me/app-grants', headers: bearer(tokens.accessToken) })
    expect(response.statusCode).toBe(403)
    expect(response.json()).toMatchObject({ success: false, error: { code: 'AUTH_003' } })
  })
})

describe('DELETE /api/me/app-grants/{id}', () => {
  it('revokes the caller’s grant, ends its sessions, and the session’s access token is refused', async () => {
    const { org, smartApp } = await newPractice()
    const nurse = await org.user('NURSE')
    const grantId = await grant(org, nurse.id, smartApp.id)
    const appTokens = await appSession(nurse, smartApp.clientId, grantId)
    const unrelated = await startSession(app.db, issuer(), nurse.id, 'ehr-api')
    expect((await me(appTokens.accessToken)).statusCode).toBe(200)

    const revoked = await call(nurse, 'DELETE', `/api/me/app-grants/${grantId}`)
    expect(revoked.statusCode, revoked.body).toBe(200)
    expect(revoked.json().data).toMatchObject({ id: grantId, revokedAt: expect.any(String) })

    const row = await app.db
      .selectFrom('app_grants')
      .select(['revoked_at', 'revoked_by'])
      .where('id', '=', grantId)
      .executeTakeFirstOrThrow()
    expect(row).toEqual({ revoked_at: expect.any(Date), revoked_by: nurse.id })
    const session = await app.db
      .selectFrom('sessions')
      .select(['revoked_at', 'revoked_reason'])
      .where('id', '=', appTokens.sessionId)
      .executeTakeFirstOrThrow()
    expect(session).toEqual({ revoked_at: expect.any(Date), revoked_reason: 'GRANT_REVOKED' })

    await expect
      .poll(async () => (await me(appTokens.accessToken)).statusCode, {
        timeout: REVOCATION_MS,
        interval: 100,
      })
      .toBe(401)
    expect((await me(appTokens.accessToken)).json()).toMatchObject({
      resourceType: 'OperationOutcome',
      issue: [{ code: 'login' }],
    })
    await expect(refreshSession(app.db, issuer(), appTokens.refreshToken)).rejects.toMatchObject({
      code: 'AUTH_001',
    })
    // A session of the same user outside the grant goes on.
    expect((await me(unrelated.accessToken)).statusCode).toBe(200)

    expect((await call(nurse, 'GET', '/api/me/app-grants')).json().data.totalElements).toBe(0)
    const again = await call(nurse, 'DELETE', `/api/me/app-grants/${grantId}`)
    expect(again.statusCode).toBe(404)
  })

  it('answers 404 for another user’s grant, in the organization or another, and leaves it standing', async () => {
    const { org, smartApp } = await newPractice()
    const nurse = await org.user('NURSE')
    const colleague = await org.user('PROVIDER')
    const theirs = await grant(org, colleague.id, smartApp.id)
    const elsewhere = await newPractice()
    const outsider = await elsewhere.org.user('ADMIN')
    for (const caller of [nurse, outsider]) {
      const response = await call(caller, 'DELETE', `/api/me/app-grants/${theirs}`)
      expect(response.statusCode).toBe(404)
      expect(response.json()).toMatchObject({ success: false, error: { code: 'RES_001' } })
    }
    expect(await standingOf(colleague.id)).toEqual([theirs])
  })
})

describe('GET /api/app-grants and DELETE /api/app-grants/{id}', () => {
  it('lists every standing grant of the organization (filtered by user or app) to ADMIN only', async () => {
    const { org, admin, smartApp } = await newPractice()
    const other = await registeredApp(app, admin, publicAppBody({ name: 'Other' }))
    const nurse = await org.user('NURSE')
    const doctor = await org.user('PROVIDER')
    const a = await grant(org, nurse.id, smartApp.id)
    const b = await grant(org, doctor.id, smartApp.id)
    const c = await grant(org, nurse.id, other.id)
    const elsewhere = await newPractice()
    await grant(elsewhere.org, elsewhere.admin.id, elsewhere.smartApp.id)

    const ids = async (query: string) =>
      (await call(admin, 'GET', `/api/app-grants${query}`))
        .json()
        .data.content.map((g: { id: number }) => g.id)
    expect(await ids('?sort=createdAt,asc')).toEqual([a, b, c])
    expect(await ids(`?userId=${nurse.id}&sort=createdAt,asc`)).toEqual([a, c])
    expect(await ids(`?appId=${smartApp.id}&sort=createdAt,asc`)).toEqual([a, b])
    expect(await ids(`?userId=${doctor.id}&appId=${other.id}`)).toEqual([])

    const read = await call(admin, 'GET', `/api/app-grants/${b}`)
    expect(read.statusCode).toBe(200)
    expect(read.json().data).toMatchObject({ id: b, userId: doctor.id, appName: 'Growth charts' })

    for (const user of [nurse, doctor, await org.user('FRONT_DESK'), await org.user('PATIENT')]) {
      expect((await call(user, 'GET', '/api/app-grants')).statusCode).toBe(403)
      expect((await call(user, 'DELETE', `/api/app-grants/${b}`)).statusCode).toBe(403)
    }
    expect(await standingOf(doctor.id)).toEqual([b])
  })

  it('lets ADMIN revoke any grant of the organization, ending its sessions; another organization’s is 403', async () => {
    const { org, admin, smartApp } = await newPractice()
    const doctor = await org.user('PROVIDER')
    const grantId = await grant(org, doctor.id, smartApp.id)
    const tokens = await appSession(doctor, smartApp.clientId, grantId)
    const elsewhere = await newPractice()

    const refused = await call(elsewhere.admin, 'DELETE', `/api/app-grants/${grantId}`)
    expect(refused.statusCode).toBe(403)
    expect(refused.json()).toMatchObject({ success: false, error: { code: 'AUTH_003' } })
    expect(refused.body).not.toContain(smartApp.clientId)
    expect((await call(elsewhere.admin, 'GET', `/api/app-grants/${grantId}`)).statusCode).toBe(403)
    expect((await call(elsewhere.admin, 'GET', '/api/app-grants')).json().data.totalElements).toBe(0)
    expect(await standingOf(doctor.id)).toEqual([grantId])

    const revoked = await call(admin, 'DELETE', `/api/app-grants/${grantId}`)
    expect(revoked.statusCode, revoked.body).toBe(200)
    expect(await standingOf(doctor.id)).toEqual([])
    const row = await app.db
      .selectFrom('app_grants')
      .select('revoked_by')
      .where('id', '=', grantId)
      .executeTakeFirstOrThrow()
    expect(row.revoked_by).toBe(admin.id)
    await expect
      .poll(async () => (await me(tokens.accessToken)).statusCode, { timeout: REVOCATION_MS, interval: 100 })
      .toBe(401)
    expect((await call(admin, 'GET', `/api/app-grants/${grantId}`)).statusCode).toBe(404)
    expect((await call(admin, 'DELETE', '/api/app-grants/2000000000')).statusCode).toBe(404)

    await expect
      .poll(async () =>
        (
          await app.db
            .selectFrom('audit_log')
            .select(['action', 'resource_type', 'resource_ids', 'outcome'])
            .where('organization_id', '=', org.id)
            .where('action', '=', 'DELETE')
            .orderBy('id')
            .execute()
        ).map((r) => `${r.resource_type} ${r.resource_ids.join(',')} ${r.outcome}`),
      )
      .toEqual([`app-grant ${grantId} SUCCESS`, 'app-grant 2000000000 NOT_FOUND'])
  })
})

describe('recordGrant', () => {
  it('replaces the standing grant: sessions move to a wider grant and end with a narrower one', async () => {
    const { org, smartApp } = await newPractice()
    const nurse = await org.user('NURSE')
    const first = await grant(org, nurse.id, smartApp.id, ['launch'])
    const session = await appSession(nurse, smartApp.clientId, first)

    const wider = await grant(org, nurse.id, smartApp.id, ['launch', 'patient/Patient.rs'])
    expect(wider).not.toBe(first)
    expect(await standingOf(nurse.id)).toEqual([wider])
    const moved = await app.db
      .selectFrom('sessions')
      .select(['app_grant_id', 'revoked_at'])
      .where('id', '=', session.sessionId)
      .executeTakeFirstOrThrow()
    expect(moved).toEqual({ app_grant_id: wider, revoked_at: null })

    const narrower = await grant(org, nurse.id, smartApp.id, ['launch'])
    expect(await standingOf(nurse.id)).toEqual([narrower])
    const ended = await app.db
      .selectFrom('sessions')
      .select(['app_grant_id', 'revoked_reason'])
      .where('id', '=', session.sessionId)
      .executeTakeFirstOrThrow()
    expect(ended).toEqual({ app_grant_id: wider, revoked_reason: 'GRANT_REPLACED' })
    const old = await app.db
      .selectFrom('app_grants')
      .select(['id', 'revoked_by'])
      .where('user_id', '=', nurse.id)
      .where('revoked_at', 'is not', null)
      .orderBy('id')
      .execute()
    expect(old).toEqual([
      { id: first, revoked_by: nurse.id },
      { id: wider, revoked_by: nurse.id },
    ])
  })

  it('refuses a deactivated app and another organization’s app', async () => {
    const { org, admin, smartApp } = await newPractice()
    const nurse = await org.user('NURSE')
    const elsewhere = await newPractice()
    await expect(grant(org, nurse.id, elsewhere.smartApp.id)).rejects.toMatchObject({ code: 'RES_002' })
    await call(admin, 'POST', `/api/smart-apps/${smartApp.id}/deactivate`)
    await expect(grant(org, nurse.id, smartApp.id)).rejects.toMatchObject({ code: 'RES_002' })
    expect(await standingOf(nurse.id)).toEqual([])
  })
})
