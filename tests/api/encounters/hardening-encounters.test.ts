import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { buildTestApp } from '../../helpers/app.js'
import { bearer, daysFromToday, type TestUser } from '../../helpers/factories.js'
import { type Clinic, linkedDoctor, newPractice } from '../../helpers/scheduling.js'

let app: App

beforeAll(async () => {
  app = await buildTestApp()
})
afterAll(async () => {
  await app.close()
})

const note = {
  encounterDate: daysFromToday(0),
  encounterType: 'OFFICE_VISIT',
  chiefComplaint: 'Headache',
  soapNote: { subjective: 'Headache for three days', plan: 'Ibuprofen as needed' },
}

interface EditedClinic extends Clinic {
  /** Another PROVIDER of the same organization. */
  colleague: TestUser
  encounterId: number
}

/** A practice, its provider linked to a user account (unless not `linked`), and a draft encounter of that provider. */
async function newClinic(linked = true): Promise<EditedClinic> {
  const practice = await newPractice(app)
  const doctor = linked ? await linkedDoctor(app, practice) : await practice.org.user('PROVIDER')
  const colleague = await practice.org.user('PROVIDER')
  const created = await app.inject({
    method: 'POST',
    url: '/api/encounters',
    headers: bearer(doctor.token),
    payload: { patientId: practice.patient.id, providerId: practice.provider.id, ...note },
  })
  expect(created.statusCode, created.body).toBe(201)
  return { ...practice, doctor, colleague, encounterId: created.json().data.id }
}

const put = (user: TestUser, id: number, chiefComplaint: string) =>
  app.inject({
    method: 'PUT',
    url: `/api/encounters/${id}`,
    headers: bearer(user.token),
    payload: { ...note, chiefComplaint },
  })

const patch = (user: TestUser, id: number, chiefComplaint: string) =>
  app.inject({
    method: 'PATCH',
    url: `/api/encounters/${id}`,
    headers: { ...bearer(user.token), 'content-type': 'application/merge-patch+json' },
    payload: { chiefComplaint },
  })

async function chiefComplaintOf(id: number) {
  const row = await app.db
    .selectFrom('encounters')
    .select(['chief_complaint', 'version'])
    .where('id', '=', id)
    .executeTakeFirstOrThrow()
  return row
}

describe('editing a DRAFT encounter note', () => {
  it.each([
    ['PUT', put],
    ['PATCH', patch],
  ])(
    '%s returns 403 AUTH_003 for another provider of the organization, changing nothing',
    async (_method, edit) => {
      const clinic = await newClinic()
      const response = await edit(clinic.colleague, clinic.encounterId, 'Rewritten by someone else')
      expect(response.statusCode).toBe(403)
      expect(response.json()).toMatchObject({ success: false, error: { code: 'AUTH_003' } })
      expect(response.json().error.details).toMatch(/provider or an administrator/)
      expect(await chiefComplaintOf(clinic.encounterId)).toEqual({ chief_complaint: 'Headache', version: 1 })
    },
  )

  it.each([
    ['PUT', put],
    ['PATCH', patch],
  ])('%s returns 200 for the encounter’s own provider', async (_method, edit) => {
    const clinic = await newClinic()
    const response = await edit(clinic.doctor, clinic.encounterId, 'Migraine')
    expect(response.statusCode, response.body).toBe(200)
    expect(response.json().data.chiefComplaint).toBe('Migraine')
  })

  it('returns 200 for an administrator who also treats patients (ADMIN and PROVIDER)', async () => {
    const clinic = await newClinic()
    const administrator = await clinic.org.user('ADMIN', 'PROVIDER')
    const response = await put(administrator, clinic.encounterId, 'Corrected by the administrator')
    expect(response.statusCode, response.body).toBe(200)
    expect(response.json().data.chiefComplaint).toBe('Corrected by the administrator')
  })

  it('lets any provider edit when the encounter’s provider has no user account, as for signing', async () => {
    const clinic = await newClinic(false)
    const response = await put(clinic.colleague, clinic.encounterId, 'Migraine')
    expect(response.statusCode, response.body).toBe(200)
  })

  it('still answers 409 for a signed note, whoever asks', async () => {
    const clinic = await newClinic()
    const signed = await app.inject({
      method: 'POST',
      url: `/api/encounters/${clinic.encounterId}/sign`,
      headers: bearer(clinic.doctor.token),
    })
    expect(signed.statusCode).toBe(200)
    expect((await put(clinic.doctor, clinic.encounterId, 'Too late')).statusCode).toBe(409)
  })
})
