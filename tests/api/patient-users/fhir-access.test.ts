import { randomUUID } from 'node:crypto'
import type { Bundle, Observation } from '@medplum/fhirtypes'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ROUTE_ACCESS } from '../../../src/access/route-access.js'
import type { App } from '../../../src/app.js'
import { buildTestApp } from '../../helpers/app.js'
import {
  bearer,
  createPatient,
  newOrganization,
  providerBody,
  type TestOrganization,
  type TestUser,
  tokenFor,
} from '../../helpers/factories.js'
import { expectFhir, matchIds } from '../../helpers/fhir.js'
import { invite, signedInPatient } from './helpers.js'

let app: App

beforeAll(async () => {
  app = await buildTestApp()
})
afterAll(async () => {
  await app.close()
})

const get = (token: string, path: string) => app.inject({ url: `/fhir/R4${path}`, headers: bearer(token) })
const search = async (token: string, path: string) => {
  const response = await get(token, path)
  expect(response.statusCode, `${path}: ${response.body}`).toBe(200)
  return matchIds(expectFhir(response) as Bundle)
}

async function post(user: TestUser, url: string, payload: object) {
  const response = await app.inject({ method: 'POST', url, headers: bearer(user.token), payload })
  expect(response.statusCode, response.body).toBe(201)
  return response.json().data.id as number
}

interface Chart {
  patient: number
  observation: number
  condition: number
}

/**
 * A practice with two patients, each with vital signs and a condition, the first signed in to
 * their own account (a password-grant token: no SMART scopes).
 */
async function practice() {
  const org = await newOrganization(app)
  const frontDesk = await org.user('FRONT_DESK')
  const nurse = await org.user('NURSE')
  const provider = await org.user('PROVIDER')
  const chart = async (): Promise<Chart> => {
    const patient = await createPatient(app, frontDesk)
    return {
      patient,
      observation: await post(nurse, `/api/patients/${patient}/vitals`, { heartRate: 71 }),
      condition: await post(provider, `/api/patients/${patient}/conditions`, {
        icd10Code: 'E11.9',
        description: 'Type 2 diabetes mellitus',
      }),
    }
  }
  const mine = await chart()
  const theirs = await chart()
  const account = await signedInPatient(app, frontDesk, mine.patient, `me.${randomUUID()}@example.test`)
  return { org, frontDesk, nurse, provider, mine, theirs, account }
}

/** A token of the patient's account as the embedded issuer signs them, with the SMART scopes given. */
function patientToken(
  org: TestOrganization,
  account: { email: string },
  subject: string,
  smart?: { scopes: string[]; patient?: string },
) {
  return tokenFor(
    app,
    { subject, email: account.email, roles: ['PATIENT'], groupPath: org.groupPath },
    undefined,
    smart,
  )
}

const subjectOf = async (id: number) =>
  (await app.db.selectFrom('users').select('subject').where('id', '=', id).executeTakeFirstOrThrow()).subject

describe('a patient signed in to their own account', () => {
  it('reads their own Patient, Observations and Conditions through FHIR', async () => {
    const { mine, account } = await practice()
    const patient = await get(account.token, `/Patient/${mine.patient}`)
    expect(patient.statusCode, patient.body).toBe(200)
    expect(expectFhir(patient)).toMatchObject({ resourceType: 'Patient', id: String(mine.patient) })
    const observation = expectFhir(
      await get(account.token, `/Observation/${mine.observation}`),
    ) as Observation
    expect(observation.subject?.reference).toBe(`Patient/${mine.patient}`)
    expect(await search(account.token, '/Patient')).toEqual([mine.patient])
    // The vital signs panel (85353-1); its heart rate is an Observation of its own.
    expect(await search(account.token, '/Observation?code=85353-1')).toEqual([mine.observation])
    expect(await search(account.token, `/Observation?patient=${mine.patient}&code=85353-1`)).toEqual([
      mine.observation,
    ])
    expect(await search(account.token, '/Condition')).toEqual([mine.condition])
    expect(await search(account.token, '/Encounter')).toEqual([])
    expect(await search(account.token, '/Appointment')).toEqual([])
    expect(await search(account.token, '/DocumentReference')).toEqual([])
    expect(await search(account.token, '/AllergyIntolerance')).toEqual([])
    expect(await search(account.token, '/MedicationStatement')).toEqual([])
    expect(await search(account.token, '/MedicationRequest')).toEqual([])
    const me = await app.inject({ url: '/api/auth/me', headers: bearer(account.token) })
    expect(me.statusCode).toBe(200)
    expect(me.json().data).toMatchObject({ email: account.email, roles: ['PATIENT'] })
  })

  it('is refused another patient’s records: 403 by id, nothing in searches naming them or not', async () => {
    const { theirs, account } = await practice()
    for (const path of [
      `/Patient/${theirs.patient}`,
      `/Observation/${theirs.observation}`,
      `/Condition/${theirs.condition}`,
      `/Patient/${theirs.patient}/_history`,
      `/Observation/${theirs.observation}/_history/1`,
    ]) {
      const response = await get(account.token, path)
      expect(response.statusCode, path).toBe(403)
      expect(expectFhir(response)).toMatchObject({ resourceType: 'OperationOutcome' })
    }
    for (const path of [
      `/Patient?_id=${theirs.patient}`,
      `/Observation?patient=${theirs.patient}`,
      `/Observation?subject=Patient/${theirs.patient}`,
      `/Condition?patient=${theirs.patient}`,
      `/Observation?_id=${theirs.observation}`,
    ]) {
      expect(await search(account.token, path), path).toEqual([])
    }
    const history = expectFhir(await get(account.token, '/_history')) as Bundle
    const seen = (history.entry ?? []).map((entry) => entry.fullUrl?.split('/R4/')[1])
    expect(seen).not.toContain(`Patient/${theirs.patient}`)
    expect(seen).not.toContain(`Observation/${theirs.observation}`)
    const counted = expectFhir(await get(account.token, '/Observation?_summary=count')) as Bundle
    // Their own vital signs panel and its heart rate.
    expect(counted.total).toBe(2)
  })

  it('stays in their compartment whatever scopes the token carries: user/ scopes, or patient/ ones launched for another patient', async () => {
    const { org, mine, theirs, account } = await practice()
    const subject = await subjectOf(account.id)
    for (const smart of [
      { scopes: ['user/*.rs'] },
      { scopes: ['system/*.rs'] },
      { scopes: ['patient/*.rs'], patient: String(theirs.patient) },
    ]) {
      const token = patientToken(org, account, subject, smart)
      const label = JSON.stringify(smart)
      expect(await search(token, '/Observation?code=85353-1'), label).toEqual([mine.observation])
      expect(await search(token, '/Patient'), label).toEqual([mine.patient])
      expect((await get(token, `/Observation/${theirs.observation}`)).statusCode, label).toBe(403)
      expect((await get(token, `/Patient/${theirs.patient}`)).statusCode, label).toBe(403)
    }
  })

  it('writes nothing through FHIR, not even their own record', async () => {
    const { mine, account } = await practice()
    const current = expectFhir(await get(account.token, `/Patient/${mine.patient}`))
    const attempts = [
      { method: 'PUT' as const, url: `/fhir/R4/Patient/${mine.patient}`, payload: current },
      {
        method: 'POST' as const,
        url: '/fhir/R4/Observation',
        payload: expectFhir(await get(account.token, `/Observation/${mine.observation}`)),
      },
    ]
    for (const attempt of attempts) {
      const response = await app.inject({
        ...attempt,
        headers: { ...bearer(account.token), 'content-type': 'application/fhir+json', 'if-match': 'W/"1"' },
      })
      expect(response.statusCode, `${attempt.method} ${attempt.url}`).toBe(403)
    }
    expect(await search(account.token, '/Observation?code=85353-1')).toEqual([mine.observation])
  })

  it('reads the practice’s directory (Practitioner, PractitionerRole, Organization, Location), which holds no patient data', async () => {
    const { org, account } = await practice()
    const admin = await org.user('ADMIN')
    const created = await app.inject({
      method: 'POST',
      url: '/api/providers',
      headers: bearer(admin.token),
      payload: providerBody(),
    })
    const practitioner = created.json().data.id
    expect(await search(account.token, '/Practitioner')).toEqual([practitioner])
    expect((await get(account.token, `/Practitioner/${practitioner}`)).statusCode).toBe(200)
    expect(await search(account.token, '/PractitionerRole')).toEqual([practitioner])
    expect((await get(account.token, `/PractitionerRole/${practitioner}`)).statusCode).toBe(200)
    for (const type of ['Organization', 'Location']) {
      expect(await search(account.token, `/${type}`)).toEqual([org.id])
      expect((await get(account.token, `/${type}/${org.id}`)).statusCode).toBe(200)
    }
  })

  it('is refused every /api route but GET /api/auth/me, even with a staff role added to the account', async () => {
    const { mine, account } = await practice()
    // An account linked to a patient is never staff: a role given to it later is not honoured.
    await app.db
      .updateTable('users')
      .set({ roles: ['PATIENT', 'PROVIDER', 'ADMIN'] })
      .where('id', '=', account.id)
      .execute()
    const org = await app.db
      .selectFrom('users')
      .innerJoin('organizations', 'organizations.id', 'users.organization_id')
      .select(['users.subject', 'organizations.group_path'])
      .where('users.id', '=', account.id)
      .executeTakeFirstOrThrow()
    const staffToken = tokenFor(app, {
      subject: org.subject,
      email: account.email,
      roles: ['PATIENT', 'PROVIDER', 'ADMIN'],
      groupPath: org.group_path,
    })
    const routes = Object.entries(ROUTE_ACCESS)
      .filter(([, access]) => Array.isArray(access.allow))
      .map(([key]) => key)
    expect(routes.length).toBeGreaterThan(100)
    for (const token of [account.token, staffToken]) {
      for (const key of routes) {
        const [method, path] = key.split(' ') as [string, string]
        const response = await app.inject({
          method: method as 'GET',
          url: path.replace(/:patientId|:id/g, String(mine.patient)).replace(/:[A-Za-z]+/g, '1'),
          headers: bearer(token),
          ...(method === 'POST' || method === 'PUT' || method === 'PATCH' ? { payload: {} } : {}),
        })
        expect(response.statusCode, key).toBe(403)
      }
    }
    expect(await search(staffToken, '/Observation?code=85353-1')).toEqual([mine.observation])
  })

  it('every FHIR read is audited as a staff member’s is: who read which records of which patient', async () => {
    const { org, mine, account } = await practice()
    await get(account.token, `/Observation/${mine.observation}`)
    await get(account.token, `/Patient/${mine.patient}`)
    await get(account.token, '/Condition')
    await app.auditLog.flush()
    const rows = await app.db
      .selectFrom('audit_log')
      .select(['action', 'resource_type', 'resource_ids', 'patient_id', 'outcome'])
      .where('organization_id', '=', org.id)
      .where('user_id', '=', account.id)
      .orderBy('id')
      .execute()
    expect(rows).toEqual([
      {
        action: 'READ',
        resource_type: 'vital-signs',
        resource_ids: [mine.observation],
        patient_id: mine.patient,
        outcome: 'SUCCESS',
      },
      {
        action: 'READ',
        resource_type: 'patient',
        resource_ids: [mine.patient],
        patient_id: mine.patient,
        outcome: 'SUCCESS',
      },
      {
        action: 'LIST',
        resource_type: 'condition',
        resource_ids: [mine.condition],
        patient_id: null,
        outcome: 'SUCCESS',
      },
    ])
  })
})

describe('the compartment restriction (security)', () => {
  it('keeps a PATIENT without a linked record from reading anyone', async () => {
    const { org, mine } = await practice()
    const unlinked = await org.user('PATIENT')
    for (const path of ['/Observation', '/Patient', `/Patient/${mine.patient}`, '/Practitioner']) {
      expect((await get(unlinked.token, path)).statusCode, path).toBe(403)
    }
  })

  it('ends a deleted patient’s access: their account’s tokens are refused', async () => {
    const org = await newOrganization(app)
    const frontDesk = await org.user('FRONT_DESK')
    const admin = await org.user('ADMIN')
    const patient = await createPatient(app, frontDesk)
    const email = `gone.${randomUUID()}@example.test`
    const invited = await invite(app, frontDesk, patient, { email, invite: 'temporaryPassword' })
    const account = invited.json().data as { id: number }
    await app.inject({ method: 'DELETE', url: `/api/patients/${patient}`, headers: bearer(admin.token) })
    // Its first use after the deletion: the account cache has not read it yet.
    const token = patientToken(org, { email }, await subjectOf(account.id))
    expect((await get(token, '/Observation')).statusCode).toBe(401)
    expect((await app.inject({ url: '/api/auth/me', headers: bearer(token) })).statusCode).toBe(401)
  })
})
