import { randomBytes } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { buildTestApp } from '../../helpers/app.js'
import {
  bearer,
  createPatient,
  newOrganization,
  patientBody,
  type TestOrganization,
  type TestUser,
} from '../../helpers/factories.js'
import {
  AUTHORIZE_PATH,
  authorizationQuery,
  Browser,
  codeOf,
  consent,
  formOf,
  PUBLIC_URL,
  pkcePair,
  REDIRECT_URI,
  type RegisteredApp,
  registerApp,
  signIn,
  TOKEN_PATH,
} from '../../helpers/smart-launch.js'

// The patient picker of SMART App Launch: a member of the practice in a standalone launch with
// launch/patient searches the practice's patients, chooses one, and the app gets that patient.

let app: App

beforeAll(async () => {
  app = await buildTestApp({ PUBLIC_URL })
})
afterAll(async () => {
  await app.close()
})

const SCOPES = ['launch/patient', 'openid', 'fhirUser', 'patient/Patient.rs', 'patient/Observation.rs']
const SCOPE = SCOPES.join(' ')

/** A patient with a name, birth date and MRN of its own. */
async function patient(
  user: TestUser,
  { firstName, lastName, dateOfBirth }: { firstName: string; lastName: string; dateOfBirth: string },
  mrn = `MRN-${randomBytes(4).toString('hex')}`,
) {
  const body = patientBody({
    identification: { firstName, lastName, dateOfBirth, gender: 'Female' },
    mrn,
  })
  return { id: await createPatient(app, user, body), mrn }
}

/** A practice with its app, a nurse (no patient record of their own), Olga Kowalski and another patient. */
async function practice() {
  const org = await newOrganization(app)
  const admin = await org.user('ADMIN')
  const nurse = await org.user('NURSE')
  const registered = await registerApp(app, org, admin, { scopes: SCOPES })
  const olga = await patient(nurse, { firstName: 'Olga', lastName: 'Kowalski', dateOfBirth: '1980-04-02' })
  const other = await patient(nurse, { firstName: 'Anna', lastName: 'Nowak', dateOfBirth: '1975-11-30' })
  return { org, admin, nurse, registered, olga, other }
}

/** The same name, birth date and MRN in another practice. */
async function twinElsewhere(mrn: string) {
  const elsewhere: TestOrganization = await newOrganization(app)
  const nurse = await elsewhere.user('NURSE')
  return patient(nurse, { firstName: 'Olga', lastName: 'Kowalski', dateOfBirth: '1980-04-02' }, mrn)
}

/** Signs `user` in on a standalone launch with launch/patient: the browser, the page and the PKCE verifier. */
async function pickerFor(registered: RegisteredApp, user: TestUser, scope = SCOPE) {
  const browser = new Browser(app)
  const { verifier, challenge } = pkcePair()
  const first = await browser.request(
    'GET',
    `${AUTHORIZE_PATH}?${authorizationQuery(registered.clientId, challenge, { scope })}`,
  )
  expect(first.statusCode).toBe(200)
  const page = await signIn(browser, first.body, user)
  return { browser, page, verifier }
}

/** Posts the picker's search form with these terms. */
async function search(browser: Browser, page: string, terms: Record<string, string>) {
  const { action, fields } = formOf(page)
  return browser.request('POST', action, { ...fields, ...terms })
}

/** The ids of the patients a picker page lists to choose. */
const listed = (page: string) =>
  [...page.matchAll(/<button type="submit" name="patient" value="(\d+)"/g)].map((match) => Number(match[1]))

/** Chooses a patient on the picker page (its id need not be one listed). */
async function choose(browser: Browser, page: string, patientId: number) {
  const { action, fields } = formOf(page)
  return browser.request('POST', action, { ...fields, patient: String(patientId) })
}

const exchange = (form: Record<string, string>) =>
  app.inject({
    method: 'POST',
    url: TOKEN_PATH,
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams(form).toString(),
  })

const auditOf = (org: { id: number }) =>
  app.db
    .selectFrom('audit_log')
    .selectAll()
    .where('organization_id', '=', org.id)
    .where('resource_type', '=', 'patient')
    .where('action', 'in', ['SEARCH', 'SELECT'])
    .orderBy('id')
    .execute()

describe('the patient picker', () => {
  it('is shown to a member of the practice after sign-in: a labelled search form, never framed, no script', async () => {
    const { registered, nurse } = await practice()
    const { page } = await pickerFor(registered, nurse)
    expect(page.statusCode, page.body).toBe(200)
    expect(page.headers['content-type']).toMatch(/^text\/html/)
    expect(page.headers['content-security-policy']).toContain("frame-ancestors 'none'")
    expect(page.headers['content-security-policy']).toContain("default-src 'none'")
    expect(page.headers['x-frame-options']).toBe('DENY')
    expect(page.headers['cache-control']).toBe('no-store')
    expect(page.body).toContain('Choose the patient')
    for (const [id, label] of [
      ['name', 'Name'],
      ['birthDate', 'Birth date'],
      ['mrn', 'MRN'],
    ]) {
      expect(page.body).toContain(`<label for="${id}">${label}</label>`)
      expect(page.body).toMatch(new RegExp(`<input id="${id}" name="${id}"`))
    }
    expect(page.body).not.toMatch(/<script|<iframe|<link|src=/)
    const { action, fields } = formOf(page.body)
    expect(action).toBe(`${AUTHORIZE_PATH}/patient`)
    expect(fields).toMatchObject({ client_id: registered.clientId, scope: SCOPE, csrf: expect.any(String) })
    expect(listed(page.body)).toEqual([])
  })

  it('finds the patient by name, by birth date and by MRN, and never a patient of another practice', async () => {
    const { registered, nurse, olga, other } = await practice()
    const twin = await twinElsewhere(olga.mrn)
    const { browser, page } = await pickerFor(registered, nurse)
    for (const terms of [
      { name: 'kowal ol' },
      { name: 'Olga Kowalski' },
      { birthDate: '1980-04-02' },
      { mrn: olga.mrn },
      { name: 'kowalski', birthDate: '1980-04-02', mrn: olga.mrn },
    ] as Record<string, string>[]) {
      const found = await search(browser, page.body, terms)
      expect(found.statusCode, JSON.stringify(terms)).toBe(200)
      expect(listed(found.body), JSON.stringify(terms)).toEqual([olga.id])
      expect(found.body).toContain('Olga Kowalski')
      expect(found.body).toContain('1 patient found.')
      expect(found.body).toContain('aria-label="Choose Olga Kowalski, born 1980-04-02"')
      expect(found.body).not.toContain(`value="${twin.id}"`)
    }
    const nowak = await search(browser, page.body, { name: 'nowak' })
    expect(listed(nowak.body)).toEqual([other.id])
    const none = await search(browser, page.body, { name: 'kowalski', birthDate: '1975-11-30' })
    expect(none.statusCode).toBe(200)
    expect(listed(none.body)).toEqual([])
    expect(none.body).toContain('No patient found')
    // The search form comes back with what was searched for.
    expect(none.body).toContain('value="kowalski"')
  })

  it('lists at most 20 patients, and says how many match', async () => {
    const { registered, nurse } = await practice()
    for (let n = 0; n < 21; n++) {
      await patient(nurse, { firstName: `Kid${n}`, lastName: 'Zielinski', dateOfBirth: '2010-01-01' })
    }
    const { browser, page } = await pickerFor(registered, nurse)
    const found = await search(browser, page.body, { name: 'zielinski' })
    expect(listed(found.body)).toHaveLength(20)
    expect(found.body).toContain('21 patients match; the first 20 are listed.')
  })

  it('shows the picker again, 422, for a search without terms or with a birth date that is not a date', async () => {
    const { registered, nurse } = await practice()
    const { browser, page } = await pickerFor(registered, nurse)
    for (const [terms, message] of [
      [{ name: ' ', birthDate: '', mrn: '' }, 'Fill in a name, a birth date or an MRN.'],
      [{ birthDate: '1980-02-30' }, 'The birth date is not a date'],
      [{ birthDate: '02/04/1980' }, 'The birth date is not a date'],
    ] as const) {
      const answer = await search(browser, page.body, terms)
      expect(answer.statusCode, JSON.stringify(terms)).toBe(422)
      expect(answer.body).toContain(message)
      expect(answer.body).toContain('role="alert"')
    }
  })

  it('refuses a patient of another practice posted directly, and an id that is none', async () => {
    const { registered, nurse, olga } = await practice()
    const twin = await twinElsewhere(olga.mrn)
    const { browser, page } = await pickerFor(registered, nurse)
    for (const id of [twin.id, 2_147_483_647]) {
      const refused = await choose(browser, page.body, id)
      expect(refused.statusCode).toBe(403)
      expect(refused.headers.location).toBeUndefined()
      expect(refused.body).toContain('That patient cannot be chosen')
      expect(refused.body).not.toContain('Allow Chart Viewer?')
    }
    const { action, fields } = formOf(page.body)
    const notAnId = await browser.request('POST', action, { ...fields, patient: `${olga.id} ` })
    expect(notAnId.statusCode).toBe(403)
  })

  it('refuses the picker’s forms without their CSRF token or sign-in', async () => {
    const { registered, nurse, olga } = await practice()
    const { browser, page } = await pickerFor(registered, nurse)
    const { action, fields } = formOf(page.body)
    const { csrf: _csrf, ...withoutToken } = fields
    for (const form of [
      { ...withoutToken, name: 'kowalski' },
      { ...withoutToken, patient: String(olga.id) },
      { ...fields, csrf: 'forged', patient: String(olga.id) },
    ]) {
      const refused = await browser.request('POST', action, form)
      expect(refused.statusCode).toBe(403)
      expect(refused.body).toContain('Form expired')
    }
    const stranger = await new Browser(app).request('POST', action, { ...fields, name: 'kowalski' })
    expect(stranger.statusCode).toBe(403)
    expect(await auditOf({ id: nurse.organizationId })).toEqual([])
  })

  it('refuses a consent form whose patient was changed or removed', async () => {
    const { registered, nurse, olga, other } = await practice()
    const { browser, page } = await pickerFor(registered, nurse)
    const consentPage = await choose(browser, page.body, olga.id)
    expect(consentPage.statusCode, consentPage.body).toBe(200)
    expect(consentPage.body).toContain('Allow Chart Viewer?')
    expect(consentPage.body).toContain('Patient: <strong>Olga Kowalski, born 1980-04-02</strong>')
    const { action, fields } = formOf(consentPage.body)
    expect(fields.patient).toBe(String(olga.id))
    const { patient: _patient, ...withoutPatient } = fields
    for (const form of [{ ...fields, patient: String(other.id) }, withoutPatient]) {
      const forged = await browser.request('POST', action, { ...form, decision: 'approve' })
      expect(forged.statusCode).toBe(403)
      expect(forged.headers.location).toBeUndefined()
    }
    const approved = await consent(browser, consentPage.body, 'approve')
    expect(approved.statusCode).toBe(303)
    expect(codeOf(approved.headers.location).code).toEqual(expect.any(String))
  })

  it('sends back invalid_scope when the user’s roles find no patients', async () => {
    const { org, registered } = await practice()
    const plain = await org.user('USER')
    const browser = new Browser(app)
    const first = await browser.request(
      'GET',
      `${AUTHORIZE_PATH}?${authorizationQuery(registered.clientId, pkcePair().challenge, { scope: SCOPE })}`,
    )
    const answer = await signIn(browser, first.body, plain)
    expect(answer.statusCode).toBe(303)
    const back = new URL(answer.headers.location as string)
    expect([back.searchParams.get('error'), back.searchParams.get('code')]).toEqual(['invalid_scope', null])
  })

  it('answers 400 to a picker form of a request with no patient to choose', async () => {
    const { registered, nurse } = await practice()
    const { browser, page } = await pickerFor(registered, nurse, 'openid patient/Patient.rs')
    // The consent page's hidden fields, sent to the picker instead.
    const { action, fields } = formOf(page.body)
    expect(action).toBe(`${AUTHORIZE_PATH}/consent`)
    const answer = await browser.request('POST', `${AUTHORIZE_PATH}/patient`, { ...fields, name: 'kowalski' })
    expect(answer.statusCode).toBe(400)
    expect(answer.body).toContain('This request has no patient to choose')
  })
})

describe('a standalone launch with a patient chosen', () => {
  it('gives the app the patient chosen, with the banner, and patient/ scopes keep to that patient', async () => {
    const { registered, nurse, olga, other } = await practice()
    const vitals = async (patientId: number) => {
      const created = await app.inject({
        method: 'POST',
        url: `/api/patients/${patientId}/vitals`,
        headers: bearer(nurse.token),
        payload: { heartRate: 70 },
      })
      expect(created.statusCode, created.body).toBe(201)
      return created.json().data.id as number
    }
    await vitals(olga.id)
    const othersVitals = await vitals(other.id)

    const { browser, page, verifier } = await pickerFor(registered, nurse)
    const found = await search(browser, page.body, { name: 'kowalski' })
    const consentPage = await choose(browser, found.body, olga.id)
    const back = await consent(browser, consentPage.body, 'approve')
    expect(back.statusCode).toBe(303)
    const tokens = await exchange({
      grant_type: 'authorization_code',
      code: codeOf(back.headers.location).code as string,
      redirect_uri: REDIRECT_URI,
      code_verifier: verifier,
      client_id: registered.clientId,
    })
    expect(tokens.statusCode, tokens.body).toBe(200)
    expect(tokens.json()).toMatchObject({ patient: String(olga.id), need_patient_banner: true })
    const token = tokens.json().access_token as string

    const observations = await app.inject({ url: '/fhir/R4/Observation', headers: bearer(token) })
    expect(observations.statusCode, observations.body).toBe(200)
    const subjects = (observations.json().entry ?? []).map(
      (entry: { resource: { subject?: { reference?: string } } }) => entry.resource.subject?.reference,
    )
    expect(subjects.length).toBeGreaterThan(0)
    expect(new Set(subjects)).toEqual(new Set([`Patient/${olga.id}`]))
    const elsewhere = await app.inject({
      url: `/fhir/R4/Observation?patient=${other.id}`,
      headers: bearer(token),
    })
    expect(elsewhere.json().entry ?? []).toEqual([])
    for (const url of [`/fhir/R4/Patient/${other.id}`, `/fhir/R4/Observation/${othersVitals}`]) {
      expect((await app.inject({ url, headers: bearer(token) })).statusCode, url).toBe(403)
    }
    expect(
      (await app.inject({ url: `/fhir/R4/Patient/${olga.id}`, headers: bearer(token) })).statusCode,
    ).toBe(200)

    // The next launch asks for the patient again, and goes back to the app once chosen: the grant stands.
    const again = await browser.request(
      'GET',
      `${AUTHORIZE_PATH}?${authorizationQuery(registered.clientId, pkcePair().challenge, { scope: SCOPE })}`,
    )
    expect(again.statusCode).toBe(200)
    expect(again.body).toContain('Choose the patient')
    const chosen = await choose(browser, again.body, other.id)
    expect(chosen.statusCode).toBe(303)
    expect(codeOf(chosen.headers.location).code).toEqual(expect.any(String))
  })

  it('audits every look-up and every choice with the patients’ ids, never the terms searched for', async () => {
    const { org, registered, nurse, olga } = await practice()
    const twin = await twinElsewhere(olga.mrn)
    const { browser, page } = await pickerFor(registered, nurse)
    await search(browser, page.body, { name: 'kowal ol' })
    await search(browser, page.body, { birthDate: '1980-04-02', mrn: olga.mrn })
    await search(browser, page.body, { name: 'nobody-like-this' })
    await search(browser, page.body, { birthDate: 'not a date' })
    await choose(browser, page.body, twin.id)
    const consentPage = await choose(browser, page.body, olga.id)
    expect(consentPage.statusCode).toBe(200)

    const records = await auditOf(org)
    expect(
      records.map(({ action, resource_ids, patient_id, status_code, outcome, user_id }) => ({
        action,
        resource_ids,
        patient_id,
        status_code,
        outcome,
        user_id,
      })),
    ).toEqual([
      {
        action: 'SEARCH',
        resource_ids: [olga.id],
        patient_id: null,
        status_code: 200,
        outcome: 'SUCCESS',
        user_id: nurse.id,
      },
      {
        action: 'SEARCH',
        resource_ids: [olga.id],
        patient_id: null,
        status_code: 200,
        outcome: 'SUCCESS',
        user_id: nurse.id,
      },
      {
        action: 'SEARCH',
        resource_ids: [],
        patient_id: null,
        status_code: 200,
        outcome: 'SUCCESS',
        user_id: nurse.id,
      },
      {
        action: 'SEARCH',
        resource_ids: [],
        patient_id: null,
        status_code: 422,
        outcome: 'REJECTED',
        user_id: nurse.id,
      },
      {
        action: 'SELECT',
        resource_ids: [twin.id],
        patient_id: null,
        status_code: 403,
        outcome: 'DENIED',
        user_id: nurse.id,
      },
      {
        action: 'SELECT',
        resource_ids: [olga.id],
        patient_id: olga.id,
        status_code: 200,
        outcome: 'SUCCESS',
        user_id: nurse.id,
      },
    ])
    const stored = JSON.stringify(records).toLowerCase()
    for (const term of ['kowal', 'olga', '1980-04-02', olga.mrn.toLowerCase(), 'nobody', 'not a date']) {
      expect(stored).not.toContain(term)
    }
    // The consent that follows names the patient chosen.
    await consent(browser, consentPage.body, 'approve')
    const consented = await app.db
      .selectFrom('audit_log')
      .select(['patient_id'])
      .where('organization_id', '=', org.id)
      .where('action', '=', 'CONSENT')
      .executeTakeFirstOrThrow()
    expect(consented.patient_id).toBe(olga.id)
  })
})
