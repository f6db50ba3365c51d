import { randomUUID } from 'node:crypto'
import { decodeJwt } from 'jose'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { buildTestApp } from '../../helpers/app.js'
import {
  bearer,
  createPatient,
  newOrganization,
  patientBody,
  providerBody,
  TEST_PASSWORD,
  type TestOrganization,
  type TestUser,
} from '../../helpers/factories.js'
import { mailText, startSmtpServer } from '../../helpers/servers/smtp-server.js'
import { invite, PATIENT_PASSWORD, passwordGrant, signedInPatient } from './helpers.js'

const RESET_PAGE = 'https://ehr.example.test/account/reset'

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

const uniqueEmail = () => `patient.${randomUUID().slice(0, 8)}@example.test`

const call = (user: TestUser, method: 'GET' | 'DELETE', patientId: number) =>
  app.inject({ method, url: `/api/patients/${patientId}/account`, headers: bearer(user.token) })

async function practice(): Promise<{ org: TestOrganization; frontDesk: TestUser; patient: number }> {
  const org = await newOrganization(app)
  const frontDesk = await org.user('FRONT_DESK')
  const patient = await createPatient(
    app,
    frontDesk,
    patientBody({
      identification: { firstName: 'Ada', lastName: 'Lovelace', dateOfBirth: '1985-12-10', gender: 'Female' },
    }),
  )
  return { org, frontDesk, patient }
}

describe('POST /api/patients/{id}/account', () => {
  it('returns 201 for FRONT_DESK with a temporary password: a PATIENT account linked to the patient, named as the patient', async () => {
    const { org, frontDesk, patient } = await practice()
    const email = uniqueEmail()
    const response = await invite(app, frontDesk, patient, { email, invite: 'temporaryPassword' })
    expect(response.statusCode, response.body).toBe(201)
    const data = response.json().data
    expect(data).toEqual({
      id: expect.any(Number),
      email,
      active: true,
      createdAt: expect.any(String),
      temporaryPassword: expect.any(String),
    })
    const row = await app.db
      .selectFrom('users')
      .select([
        'organization_id',
        'roles',
        'patient_id',
        'kind',
        'first_name',
        'last_name',
        'password_change_required',
      ])
      .where('id', '=', data.id)
      .executeTakeFirstOrThrow()
    expect(row).toEqual({
      organization_id: org.id,
      roles: ['PATIENT'],
      patient_id: patient,
      kind: 'PERSON',
      first_name: 'Ada',
      last_name: 'Lovelace',
      password_change_required: true,
    })
    // The temporary password signs nobody in before it is replaced.
    const early = await passwordGrant(app, email, data.temporaryPassword)
    expect(early.statusCode).toBe(400)
    expect(early.json()).toMatchObject({ error: 'invalid_grant' })
  })

  it('returns 201 for ADMIN and mails the patient a link to choose a password (the default), after which they sign in', async () => {
    const { org, patient } = await practice()
    const admin = await org.user('ADMIN')
    const email = uniqueEmail()
    const before = smtp.received.length
    const response = await invite(app, admin, patient, { email })
    expect(response.statusCode, response.body).toBe(201)
    expect(response.json().data).toMatchObject({ email, active: true, temporaryPassword: null })
    await app.background.settled()
    const mails = smtp.received.slice(before)
    expect(mails.map((mail) => mail.to)).toEqual([[email]])
    const link = new URL(mailText(mails[0] as (typeof mails)[number]).match(/https:\/\/\S+/)?.[0] ?? '')
    expect(`${link.origin}${link.pathname}`).toBe(RESET_PAGE)
    const reset = await app.inject({
      method: 'POST',
      url: '/api/auth/reset-password',
      payload: { token: link.searchParams.get('token'), newPassword: PATIENT_PASSWORD },
    })
    expect(reset.statusCode, reset.body).toBe(200)
    const granted = await passwordGrant(app, email, PATIENT_PASSWORD)
    expect(granted.statusCode, granted.body).toBe(200)
    expect(decodeJwt(granted.json().access_token)).toMatchObject({
      patient: String(patient),
      fhirUser: `Patient/${patient}`,
      realm_access: { roles: ['PATIENT'] },
      groups: [org.groupPath],
    })
  })

  it.each(['PROVIDER', 'NURSE', 'BILLING', 'PATIENT', 'USER'] as const)(
    'returns 403 for %s, creating nothing',
    async (role) => {
      const { org, patient } = await practice()
      const caller = await org.user(role)
      const response = await invite(app, caller, patient, { email: uniqueEmail() })
      expect(response.statusCode).toBe(403)
      expect(response.json()).toMatchObject({ success: false, error: { code: 'AUTH_003' } })
      const linked = await app.db.selectFrom('users').select('id').where('patient_id', '=', patient).execute()
      expect(linked).toEqual([])
    },
  )

  it('returns 409 RES_002 when the patient already has an account, active or not', async () => {
    const { frontDesk, patient } = await practice()
    expect((await invite(app, frontDesk, patient, { email: uniqueEmail() })).statusCode).toBe(201)
    const again = await invite(app, frontDesk, patient, { email: uniqueEmail() })
    expect(again.statusCode).toBe(409)
    expect(again.json()).toMatchObject({ success: false, error: { code: 'RES_002' } })
    expect((await call(frontDesk, 'DELETE', patient)).statusCode).toBe(200)
    expect((await invite(app, frontDesk, patient, { email: uniqueEmail() })).statusCode).toBe(409)
  })

  it('returns 409 RES_002 when the e-mail address is taken, whatever its case and organization', async () => {
    const { frontDesk, patient } = await practice()
    const staff = await (await newOrganization(app)).user('NURSE')
    const response = await invite(app, frontDesk, patient, { email: staff.email.toUpperCase() })
    expect(response.statusCode).toBe(409)
    expect(response.json()).toMatchObject({
      success: false,
      error: { code: 'RES_002', fields: [{ path: 'email' }] },
    })
  })

  it('returns 404 for a missing or deleted patient and 403 for another organization’s', async () => {
    const { org, frontDesk, patient } = await practice()
    const admin = await org.user('ADMIN')
    expect((await invite(app, frontDesk, 2_000_000_000, { email: uniqueEmail() })).statusCode).toBe(404)
    expect(
      (await app.inject({ method: 'DELETE', url: `/api/patients/${patient}`, headers: bearer(admin.token) }))
        .statusCode,
    ).toBe(200)
    const deleted = await invite(app, frontDesk, patient, { email: uniqueEmail() })
    expect(deleted.statusCode).toBe(404)
    expect(deleted.json()).toMatchObject({ success: false, error: { code: 'RES_001' } })
    const other = await practice()
    const foreign = await invite(app, frontDesk, other.patient, { email: uniqueEmail() })
    expect(foreign.statusCode).toBe(403)
    expect(foreign.json()).toMatchObject({ success: false, error: { code: 'AUTH_003' } })
    const linked = await app.db
      .selectFrom('users')
      .select('id')
      .where('patient_id', 'in', [patient, other.patient])
      .execute()
    expect(linked).toEqual([])
  })

  it('returns 422 for a body that is not an e-mail address or has unknown fields, creating nothing', async () => {
    const { frontDesk, patient } = await practice()
    for (const payload of [
      {},
      { email: 'not-an-address' },
      { email: uniqueEmail(), roles: ['ADMIN'] },
      { email: uniqueEmail(), invite: 'sms' },
    ]) {
      const response = await invite(app, frontDesk, patient, payload)
      expect(response.statusCode, JSON.stringify(payload)).toBe(422)
      expect(response.json()).toMatchObject({
        success: false,
        error: { code: expect.stringMatching(/^VAL_00[12]$/) },
      })
    }
    const linked = await app.db.selectFrom('users').select('id').where('patient_id', '=', patient).execute()
    expect(linked).toEqual([])
  })

  it('is audited: who invited which patient, under the account’s id', async () => {
    const { org, frontDesk, patient } = await practice()
    const response = await invite(app, frontDesk, patient, { email: uniqueEmail() })
    const { id } = response.json().data
    await call(frontDesk, 'GET', patient)
    await app.auditLog.flush()
    const rows = await app.db
      .selectFrom('audit_log')
      .select(['action', 'resource_type', 'resource_ids', 'patient_id', 'user_id', 'outcome'])
      .where('organization_id', '=', org.id)
      .where('resource_type', '=', 'user')
      .orderBy('id')
      .execute()
    expect(rows).toEqual([
      {
        action: 'CREATE',
        resource_type: 'user',
        resource_ids: [id],
        patient_id: patient,
        user_id: frontDesk.id,
        outcome: 'SUCCESS',
      },
      {
        action: 'READ',
        resource_type: 'user',
        resource_ids: [id],
        patient_id: patient,
        user_id: frontDesk.id,
        outcome: 'SUCCESS',
      },
    ])
  })
})

describe('GET /api/patients/{id}/account', () => {
  it('returns 200 with the account, 404 when the patient has none, 403 for another organization’s patient', async () => {
    const { frontDesk, patient } = await practice()
    const none = await call(frontDesk, 'GET', patient)
    expect(none.statusCode).toBe(404)
    expect(none.json()).toMatchObject({ success: false, error: { code: 'RES_001' } })
    const email = uniqueEmail()
    const created = (await invite(app, frontDesk, patient, { email })).json().data
    const response = await call(frontDesk, 'GET', patient)
    expect(response.statusCode).toBe(200)
    expect(response.json()).toEqual({
      success: true,
      message: 'Patient account retrieved',
      data: { id: created.id, email, active: true, createdAt: created.createdAt },
    })
    const other = await practice()
    expect((await call(other.frontDesk, 'GET', patient)).statusCode).toBe(403)
    expect((await call(frontDesk, 'GET', 2_000_000_000)).statusCode).toBe(404)
    const nurse = await (await newOrganization(app)).user('NURSE')
    expect((await call(nurse, 'GET', patient)).statusCode).toBe(403)
  })
})

describe('DELETE /api/patients/{id}/account', () => {
  it('deactivates the account: its sessions end, its tokens stop working, it cannot sign in again', async () => {
    const { frontDesk, patient } = await practice()
    const signedIn = await signedInPatient(app, frontDesk, patient, uniqueEmail())
    const fhirRead = () => app.inject({ url: `/fhir/R4/Patient/${patient}`, headers: bearer(signedIn.token) })
    expect((await fhirRead()).statusCode).toBe(200)

    const response = await call(frontDesk, 'DELETE', patient)
    expect(response.statusCode).toBe(200)
    expect(response.json().data).toMatchObject({ id: signedIn.id, active: false })
    // Revocations are read every 2 seconds: the token already used stops working within that.
    await expect.poll(async () => (await fhirRead()).statusCode, { timeout: 10_000, interval: 250 }).toBe(401)
    expect((await passwordGrant(app, signedIn.email, PATIENT_PASSWORD)).statusCode).toBe(401)
    const refreshed = await app.inject({
      method: 'POST',
      url: '/realms/ehr/protocol/openid-connect/token',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({
        grant_type: 'refresh_token',
        client_id: 'ehr-api',
        refresh_token: signedIn.refreshToken,
      }).toString(),
    })
    expect(refreshed.statusCode).toBe(400)
    expect((await call(frontDesk, 'GET', patient)).json().data.active).toBe(false)
    // Again: nothing more to end.
    expect((await call(frontDesk, 'DELETE', patient)).statusCode).toBe(200)
  })

  it('returns 404 without an account and 403 for another organization’s patient, for ADMIN too', async () => {
    const { org, patient } = await practice()
    const admin = await org.user('ADMIN')
    expect((await call(admin, 'DELETE', patient)).statusCode).toBe(404)
    const other = await practice()
    await invite(app, other.frontDesk, other.patient, { email: uniqueEmail() })
    expect((await call(admin, 'DELETE', other.patient)).statusCode).toBe(403)
    expect((await call(other.frontDesk, 'GET', other.patient)).json().data.active).toBe(true)
  })
})

describe('DELETE /api/patients/{id}', () => {
  it('deactivates the patient’s own account with the patient: its sessions end and it cannot sign in again', async () => {
    const { org, frontDesk, patient } = await practice()
    const admin = await org.user('ADMIN')
    const signedIn = await signedInPatient(app, frontDesk, patient, uniqueEmail())
    const kept = await practice()
    const bystander = await signedInPatient(app, kept.frontDesk, kept.patient, uniqueEmail())

    const deleted = await app.inject({
      method: 'DELETE',
      url: `/api/patients/${patient}`,
      headers: bearer(admin.token),
    })
    expect(deleted.statusCode, deleted.body).toBe(200)
    const account = await app.db
      .selectFrom('users')
      .select('active')
      .where('id', '=', signedIn.id)
      .executeTakeFirstOrThrow()
    expect(account.active).toBe(false)
    const sessions = await app.db
      .selectFrom('sessions')
      .select('revoked_reason')
      .where('user_id', 'in', [signedIn.id, bystander.id])
      .orderBy('user_id')
      .execute()
    expect(sessions.map((session) => session.revoked_reason)).toEqual(
      signedIn.id < bystander.id ? ['PATIENT_DELETED', null] : [null, 'PATIENT_DELETED'],
    )
    expect((await passwordGrant(app, signedIn.email, PATIENT_PASSWORD)).statusCode).toBe(401)
    expect((await passwordGrant(app, bystander.email, PATIENT_PASSWORD)).statusCode).toBe(200)
  })
})

describe('token claims', () => {
  it('names a provider’s user as their Practitioner (fhirUser), and staff without a record as no one', async () => {
    const org = await newOrganization(app)
    const admin = await org.user('ADMIN')
    const provider = await org.user('PROVIDER')
    const nurse = await org.user('NURSE')
    const created = await app.inject({
      method: 'POST',
      url: '/api/providers',
      headers: bearer(admin.token),
      payload: providerBody({ userId: provider.id }),
    })
    expect(created.statusCode, created.body).toBe(201)
    const practitioner = created.json().data.id
    const providerClaims = decodeJwt(
      (await passwordGrant(app, provider.email, TEST_PASSWORD)).json().access_token,
    )
    expect(providerClaims.fhirUser).toBe(`Practitioner/${practitioner}`)
    expect(providerClaims.patient).toBeUndefined()
    const nurseClaims = decodeJwt((await passwordGrant(app, nurse.email, TEST_PASSWORD)).json().access_token)
    expect(nurseClaims.fhirUser).toBeUndefined()
    expect(nurseClaims.patient).toBeUndefined()
  })
})
