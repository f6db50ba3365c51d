import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { hashToken } from '../../../src/identity/sessions.js'
import { redeemLaunch } from '../../../src/modules/smart-apps/service.js'
import { buildTestApp } from '../../helpers/app.js'
import {
  createPatient,
  encounterNote,
  newOrganization,
  providerBody,
  type TestOrganization,
  type TestUser,
} from '../../helpers/factories.js'
import { type CreatedApp, callAs, publicAppBody, registeredApp } from './smart-apps.js'

const PUBLIC_URL = 'https://ehr.example.test'

let app: App

beforeAll(async () => {
  app = await buildTestApp({ PUBLIC_URL })
})
afterAll(async () => {
  await app.close()
})

const call = (user: TestUser, method: 'GET' | 'POST' | 'DELETE', url: string, payload?: object) =>
  callAs(app, user, method, url, payload)

interface Practice {
  org: TestOrganization
  admin: TestUser
  doctor: TestUser
  nurse: TestUser
  patientId: number
  smartApp: CreatedApp
}

async function newPractice(): Promise<Practice> {
  const org = await newOrganization(app)
  const admin = await org.user('ADMIN')
  const doctor = await org.user('PROVIDER')
  const nurse = await org.user('NURSE')
  return {
    org,
    admin,
    doctor,
    nurse,
    patientId: await createPatient(app, nurse),
    smartApp: await registeredApp(app, admin),
  }
}

/** An encounter of the patient, written by the doctor. */
async function encounterOf(practice: Practice, patientId: number): Promise<number> {
  const provider = await call(practice.admin, 'POST', '/api/providers', providerBody())
  expect(provider.statusCode, provider.body).toBe(201)
  const encounter = await call(practice.doctor, 'POST', '/api/encounters', {
    ...encounterNote(),
    patientId,
    providerId: provider.json().data.id,
  })
  expect(encounter.statusCode, encounter.body).toBe(201)
  return encounter.json().data.id
}

const redeem = (launch: string, organizationId: number, appId: number) =>
  app.db.transaction().execute((trx) => redeemLaunch(trx, launch, { organizationId, appId }))

describe('POST /api/smart-launches', () => {
  it('returns 201 with an opaque launch, its expiry in 5 minutes and the app’s launch URL with iss and launch', async () => {
    const practice = await newPractice()
    const { org, doctor, patientId, smartApp } = practice
    const encounterId = await encounterOf(practice, patientId)
    const before = Date.now()
    const response = await call(doctor, 'POST', '/api/smart-launches', {
      patientId,
      encounterId,
      appId: smartApp.id,
    })
    expect(response.statusCode, response.body).toBe(201)
    const { launch, expiresAt, launchUrl } = response.json().data
    expect(launch).toMatch(/^[A-Za-z0-9_-]{43}$/)
    const expiry = Date.parse(expiresAt) - before
    expect(expiry).toBeGreaterThan(4 * 60_000)
    expect(expiry).toBeLessThan(6 * 60_000)
    const opened = new URL(launchUrl)
    expect(`${opened.origin}${opened.pathname}`).toBe('https://charts.example.com/launch')
    expect(Object.fromEntries(opened.searchParams)).toEqual({ iss: `${PUBLIC_URL}/fhir/R4`, launch })

    // Only the hash is stored.
    const row = await app.db
      .selectFrom('launch_contexts')
      .selectAll()
      .where('launch_hash', '=', hashToken(launch))
      .executeTakeFirstOrThrow()
    expect(row).toMatchObject({
      organization_id: org.id,
      created_by: doctor.id,
      app_id: smartApp.id,
      patient_id: patientId,
      encounter_id: encounterId,
      used_at: null,
    })
    expect(JSON.stringify(row)).not.toContain(launch)

    expect(await redeem(launch, org.id, smartApp.id)).toEqual({ patientId, encounterId })
    // Single use.
    expect(await redeem(launch, org.id, smartApp.id)).toBeUndefined()
  })

  it('makes a launch for any app without appId (no launch URL), redeemable once by any app of the organization', async () => {
    const { org, admin, nurse, patientId, smartApp } = await newPractice()
    const response = await call(nurse, 'POST', '/api/smart-launches', { patientId })
    expect(response.statusCode, response.body).toBe(201)
    const { launch, launchUrl } = response.json().data
    expect(launchUrl).toBeNull()
    const other = await registeredApp(app, admin, publicAppBody({ name: 'Other' }))
    expect(await redeem(launch, org.id, other.id)).toEqual({ patientId, encounterId: null })
    expect(await redeem(launch, org.id, smartApp.id)).toBeUndefined()
  })

  it('answers no launch URL for an app without one', async () => {
    const { admin, doctor, patientId } = await newPractice()
    const plain = await registeredApp(app, admin, publicAppBody({ launchUrl: undefined }))
    const response = await call(doctor, 'POST', '/api/smart-launches', { patientId, appId: plain.id })
    expect(response.statusCode, response.body).toBe(201)
    expect(response.json().data.launchUrl).toBeNull()
  })

  it('is redeemed only by its app, in its organization, before it expires, and not for an unknown value', async () => {
    const { org, admin, doctor, patientId, smartApp } = await newPractice()
    const other = await registeredApp(app, admin, publicAppBody({ name: 'Other' }))
    const elsewhere = await newPractice()
    const make = async () =>
      (await call(doctor, 'POST', '/api/smart-launches', { patientId, appId: smartApp.id })).json().data
        .launch as string

    const launch = await make()
    expect(await redeem(launch, org.id, other.id)).toBeUndefined()
    expect(await redeem(launch, elsewhere.org.id, smartApp.id)).toBeUndefined()
    expect(await redeem('not-a-launch', org.id, smartApp.id)).toBeUndefined()
    // Those refusals did not use it up.
    expect(await redeem(launch, org.id, smartApp.id)).toEqual({ patientId, encounterId: null })

    // Redeemed at the same time (concurrent transactions on PostgreSQL): once.
    const raced = await make()
    const outcomes = await Promise.all([1, 2, 3].map(() => redeem(raced, org.id, smartApp.id)))
    expect(outcomes.filter((outcome) => outcome !== undefined)).toEqual([{ patientId, encounterId: null }])

    const expired = await make()
    await app.db
      .updateTable('launch_contexts')
      .set({ expires_at: new Date(Date.now() - 1000) })
      .where('launch_hash', '=', hashToken(expired))
      .execute()
    expect(await redeem(expired, org.id, smartApp.id)).toBeUndefined()

    // A patient deleted since the launch was made is no context.
    const doomed = await createPatient(app, doctor)
    const gone = (await call(doctor, 'POST', '/api/smart-launches', { patientId: doomed })).json().data.launch
    const deleted = await callAs(app, admin, 'DELETE', `/api/patients/${doomed}`)
    expect(deleted.statusCode, deleted.body).toBeLessThan(300)
    expect(await redeem(gone, org.id, smartApp.id)).toBeUndefined()
  })

  it('answers 403 for another organization’s patient or app, 404 for none, 422 for another patient’s encounter', async () => {
    const practice = await newPractice()
    const { doctor, patientId } = practice
    const elsewhere = await newPractice()
    const theirEncounter = await encounterOf(elsewhere, elsewhere.patientId)
    const otherPatient = await createPatient(app, doctor)
    const otherEncounter = await encounterOf(practice, otherPatient)

    const cases: [object, number, string][] = [
      [{ patientId: elsewhere.patientId }, 403, 'AUTH_003'],
      [{ patientId, appId: elsewhere.smartApp.id }, 403, 'AUTH_003'],
      [{ patientId: 2_000_000_000 }, 404, 'RES_001'],
      [{ patientId, appId: 2_000_000_000 }, 404, 'RES_001'],
      [{ patientId, encounterId: otherEncounter }, 422, 'VAL_001'],
      [{ patientId, encounterId: theirEncounter }, 422, 'VAL_001'],
      [{ patientId, launch: 'chosen' }, 422, 'VAL_001'],
      [{}, 422, 'VAL_002'],
    ]
    for (const [body, status, code] of cases) {
      const response = await call(doctor, 'POST', '/api/smart-launches', body)
      expect(response.statusCode, JSON.stringify(body)).toBe(status)
      expect(response.json()).toMatchObject({ success: false, error: { code } })
      expect(response.body).not.toContain(elsewhere.smartApp.clientId)
    }
    const launches = await app.db
      .selectFrom('launch_contexts')
      .select('launch_hash')
      .where('created_by', '=', doctor.id)
      .execute()
    expect(launches).toEqual([])
  })

  it('refuses a deactivated app (422) and every role that does not read clinical records (403)', async () => {
    const { org, admin, doctor, patientId, smartApp } = await newPractice()
    await call(admin, 'POST', `/api/smart-apps/${smartApp.id}/deactivate`)
    const refused = await call(doctor, 'POST', '/api/smart-launches', { patientId, appId: smartApp.id })
    expect(refused.statusCode).toBe(422)
    expect(refused.json().error.fields).toEqual([{ path: 'appId', message: 'is a deactivated app' }])
    for (const role of ['ADMIN', 'FRONT_DESK', 'BILLING', 'PATIENT', 'USER'] as const) {
      const user = await org.user(role)
      const response = await call(user, 'POST', '/api/smart-launches', { patientId })
      expect(response.statusCode, role).toBe(403)
      expect(response.json()).toMatchObject({ success: false, error: { code: 'AUTH_003' } })
    }
  })

  it('records the launch as a CREATE of a smart-launch naming the patient', async () => {
    const { org, nurse, patientId } = await newPractice()
    const response = await call(nurse, 'POST', '/api/smart-launches', { patientId })
    expect(response.statusCode).toBe(201)
    await expect
      .poll(async () =>
        app.db
          .selectFrom('audit_log')
          .select(['user_id', 'action', 'resource_type', 'patient_id', 'outcome', 'status_code'])
          .where('organization_id', '=', org.id)
          .where('resource_type', '=', 'smart-launch')
          .execute(),
      )
      .toEqual([
        {
          user_id: nurse.id,
          action: 'CREATE',
          resource_type: 'smart-launch',
          patient_id: patientId,
          outcome: 'SUCCESS',
          status_code: 201,
        },
      ])
  })
})
