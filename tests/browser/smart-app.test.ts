import type { Page } from 'playwright-core'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { type SampleApp, startSampleApp } from '../../scripts/smart-app/server.js'
import type { App } from '../../src/app.js'
import { invite, PATIENT_PASSWORD } from '../api/patient-users/helpers.js'
import { openChromium, type TestBrowser } from '../helpers/chromium.js'
import {
  bearer,
  createPatient,
  newOrganization,
  patientBody,
  providerBody,
  TEST_PASSWORD,
  type TestOrganization,
  type TestUser,
} from '../helpers/factories.js'
import { listeningFhirApp } from '../helpers/fhir-client.js'

// SMART's own client library (fhirclient, in the sample app of examples/smart-app) launching against
// the service in Chromium: the EHR launch, a staff member's standalone launch through the patient
// picker, a patient's own standalone launch, each reading the chart and renewing its access with the
// refresh token.

const TEST_MS = 120_000
const SCOPES = ['launch', 'launch/patient', 'openid', 'fhirUser', 'offline_access']
const DATA_SCOPES = ['patient/Patient.rs', 'patient/Observation.rs']

let ehr: App
let fhirBase: string
let sampleApp: SampleApp
let chromium: TestBrowser
let org: TestOrganization
let admin: TestUser
let nurse: TestUser
let provider: TestUser
let practitionerId: number
let clientId: string
let appId: number

beforeAll(async () => {
  sampleApp = await startSampleApp('127.0.0.1', 0)
  ;({ app: ehr, baseUrl: fhirBase } = await listeningFhirApp({ CORS_ORIGINS: sampleApp.origin }))
  org = await newOrganization(ehr)
  admin = await org.user('ADMIN')
  nurse = await org.user('NURSE')
  provider = await org.user('PROVIDER')
  const practitioner = await ehr.inject({
    method: 'POST',
    url: '/api/providers',
    headers: bearer(admin.token),
    payload: providerBody({ userId: provider.id }),
  })
  expect(practitioner.statusCode, practitioner.body).toBe(201)
  practitionerId = practitioner.json().data.id
  // Registered as docs/smart.md says: the redirect URI, then the launch URL naming the client id.
  const registered = await ehr.inject({
    method: 'POST',
    url: '/api/smart-apps',
    headers: bearer(admin.token),
    payload: {
      name: 'Chart Viewer',
      type: 'public',
      redirectUris: [`${sampleApp.origin}/index.html`],
      scopes: [...SCOPES, ...DATA_SCOPES],
    },
  })
  expect(registered.statusCode, registered.body).toBe(201)
  ;({ id: appId, clientId } = registered.json().data)
  const patched = await ehr.inject({
    method: 'PATCH',
    url: `/api/smart-apps/${appId}`,
    headers: { ...bearer(admin.token), 'content-type': 'application/merge-patch+json' },
    payload: { launchUrl: `${sampleApp.origin}/launch.html?client_id=${clientId}` },
  })
  expect(patched.statusCode, patched.body).toBe(200)
  chromium = await openChromium([sampleApp.origin, new URL(fhirBase).origin])
}, 60_000)
// Each launch starts in a browser nobody is signed in to.
beforeEach(() => chromium.context.clearCookies())
afterAll(async () => {
  await chromium?.close()
  await ehr?.close()
  await new Promise((resolve) => sampleApp?.server.close(resolve))
})

const adaLovelace = () => {
  const body = patientBody()
  return { ...body, identification: { ...body.identification, firstName: 'Ada', lastName: 'Lovelace' } }
}

/** A patient of the practice with two vital-sign records, and another patient with one. */
async function patientWithObservations() {
  const patientId = await createPatient(ehr, nurse, adaLovelace())
  const otherPatient = await createPatient(ehr, nurse)
  for (const [id, heartRate] of [
    [patientId, 71],
    [patientId, 64],
    [otherPatient, 90],
  ] as const) {
    const created = await ehr.inject({
      method: 'POST',
      url: `/api/patients/${id}/vitals`,
      headers: bearer(nurse.token),
      payload: { heartRate },
    })
    expect(created.statusCode, created.body).toBe(201)
  }
  return patientId
}

/** The Observations the service holds for the patient, as a staff member's FHIR search finds them. */
async function observationCount(patientId: number) {
  const found = await ehr.inject({
    url: `/fhir/R4/Observation?patient=${patientId}&_summary=count`,
    headers: bearer(nurse.token),
  })
  expect(found.statusCode, found.body).toBe(200)
  return found.json().total as number
}

async function signIn(page: Page, email: string, password: string) {
  await page.getByLabel('Email').fill(email)
  await page.getByLabel('Password').fill(password)
  await page.getByRole('button', { name: 'Sign in' }).click()
}

/** The app's chart once it is ready, and its access renewed with the refresh token. */
async function expectChart(page: Page, patientId: number, fhirUser: RegExp) {
  await page
    .getByRole('status')
    .filter({ hasText: /^(Ready|Cannot)/ })
    .first()
    .waitFor()
  expect(await page.locator('#status').textContent()).toBe('Ready')
  expect(await page.locator('#patient-id').textContent()).toBe(`Patient/${patientId}`)
  expect(await page.locator('#patient-name').textContent()).toBe('Ada Lovelace')
  expect(await page.locator('#user').textContent()).toMatch(fhirUser)
  const count = await observationCount(patientId)
  expect(count).toBeGreaterThanOrEqual(2)
  expect(await page.locator('#observation-count').textContent()).toBe(String(count))
  expect(await page.locator('#observations li').count()).toBe(count)

  await page.getByRole('button', { name: 'Renew access' }).click()
  await expect.poll(() => page.locator('#refresh-status').textContent()).not.toBe('')
  expect(await page.locator('#refresh-status').textContent()).toBe('Access renewed')
}

describe('the sample SMART app (fhirclient) in Chromium', () => {
  it(
    'EHR launch: opened from a launch context, the provider signs in and allows, and the app reads the patient',
    async () => {
      const patientId = await patientWithObservations()
      const created = await ehr.inject({
        method: 'POST',
        url: '/api/smart-launches',
        headers: bearer(provider.token),
        payload: { patientId, appId },
      })
      expect(created.statusCode, created.body).toBe(201)
      const { launchUrl } = created.json().data as { launchUrl: string }
      expect(new URL(launchUrl).searchParams.get('iss')).toBe(fhirBase)

      const page = await chromium.context.newPage()
      await page.goto(launchUrl)
      await signIn(page, provider.email, TEST_PASSWORD)
      await expect.poll(() => page.title()).toMatch(/^Allow Chart Viewer/)
      expect(await page.getByText('Ada Lovelace').count()).toBe(1)
      await page.getByRole('button', { name: 'Allow' }).click()
      await page.waitForURL(`${sampleApp.origin}/index.html**`)
      await expectChart(page, patientId, new RegExp(`Practitioner/${practitionerId}$`))
      expect(chromium.offHost).toEqual([])
      await page.close()
    },
    TEST_MS,
  )

  it(
    'standalone launch by a nurse: the patient picker finds the patient by MRN, and the app reads them',
    async () => {
      const patientId = await patientWithObservations()
      const read = await ehr.inject({ url: `/api/patients/${patientId}`, headers: bearer(nurse.token) })
      const { mrn } = read.json().data as { mrn: string }

      const page = await chromium.context.newPage()
      await page.goto(
        `${sampleApp.origin}/launch.html?${new URLSearchParams({ client_id: clientId, iss: fhirBase })}`,
      )
      await signIn(page, nurse.email, TEST_PASSWORD)
      await expect.poll(() => page.title()).toBe('Choose the patient')
      await page.getByLabel('MRN').fill(mrn)
      await page.getByRole('button', { name: 'Search' }).click()
      await page.getByRole('button', { name: /^Choose Ada Lovelace, born / }).click()
      await expect.poll(() => page.title()).toMatch(/^Allow Chart Viewer/)
      await page.getByRole('button', { name: 'Allow' }).click()
      await page.waitForURL(`${sampleApp.origin}/index.html**`)
      // A nurse's account stands for no Practitioner: no fhirUser.
      await expectChart(page, patientId, /^$/)
      expect(chromium.offHost).toEqual([])
      await page.close()
    },
    TEST_MS,
  )

  it(
    'standalone launch by a patient: first sign-in with the temporary password, then their own chart only',
    async () => {
      const patientId = await patientWithObservations()
      const email = `ada-${patientId}@example.test`
      const invited = await invite(ehr, admin, patientId, { email, invite: 'temporaryPassword' })
      expect(invited.statusCode, invited.body).toBe(201)
      const { temporaryPassword } = invited.json().data as { temporaryPassword: string }

      const page = await chromium.context.newPage()
      await page.goto(
        `${sampleApp.origin}/launch.html?${new URLSearchParams({ client_id: clientId, iss: fhirBase })}`,
      )
      await signIn(page, email, temporaryPassword)
      await page.getByLabel('Temporary password').fill(temporaryPassword)
      await page.getByLabel('New password').fill(PATIENT_PASSWORD)
      await page.getByRole('button', { name: 'Change password and continue' }).click()
      await expect.poll(() => page.title()).toMatch(/^Allow Chart Viewer/)
      await page.getByRole('button', { name: 'Allow' }).click()
      await page.waitForURL(`${sampleApp.origin}/index.html**`)
      await expectChart(page, patientId, new RegExp(`Patient/${patientId}$`))
      expect(chromium.offHost).toEqual([])
      await page.close()
    },
    TEST_MS,
  )
})
