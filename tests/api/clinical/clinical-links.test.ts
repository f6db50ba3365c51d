import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { buildTestApp } from '../../helpers/app.js'
import { bearer, createPatient, daysFromToday } from '../../helpers/factories.js'
import { fileBytes, multipart } from '../../helpers/multipart.js'
import { newPractice, type Practice } from '../../helpers/scheduling.js'

let app: App
let practice: Practice
let encounterId: number

beforeAll(async () => {
  app = await buildTestApp()
  practice = await newPractice(app)
  const doctor = await practice.org.user('PROVIDER')
  const encounter = await app.inject({
    method: 'POST',
    url: '/api/encounters',
    headers: bearer(doctor.token),
    payload: {
      patientId: practice.patient.id,
      providerId: practice.provider.id,
      encounterDate: daysFromToday(0),
      encounterType: 'OFFICE_VISIT',
      chiefComplaint: 'Cough',
    },
  })
  expect(encounter.statusCode, encounter.body).toBe(201)
  encounterId = encounter.json().data.id
})
afterAll(async () => {
  await app.close()
})

describe('links from clinical records and documents', () => {
  it('records vitals in an encounter of the same patient, and refuses one of another patient', async () => {
    const url = `/api/patients/${practice.patient.id}/vitals`
    const linked = await app.inject({
      method: 'POST',
      url,
      headers: bearer(practice.nurse.token),
      payload: { heartRate: 72, encounterId },
    })
    expect(linked.statusCode).toBe(201)
    expect(linked.json().data.encounterId).toBe(encounterId)

    const otherPatient = await createPatient(app, practice.nurse)
    const wrong = await app.inject({
      method: 'POST',
      url: `/api/patients/${otherPatient}/vitals`,
      headers: bearer(practice.nurse.token),
      payload: { heartRate: 72, encounterId },
    })
    expect(wrong.statusCode).toBe(422)
    expect(wrong.json().error.details).toBe('encounterId is not an encounter of this patient')
  })

  it('checks that a medication prescriber is a provider of the organization', async () => {
    const doctor = await practice.org.user('PROVIDER')
    const url = `/api/patients/${practice.patient.id}/medications`
    const ok = await app.inject({
      method: 'POST',
      url,
      headers: bearer(doctor.token),
      payload: { name: 'Lisinopril 10 mg', prescriberId: practice.provider.id },
    })
    expect(ok.statusCode).toBe(201)
    expect(ok.json().data.prescriberId).toBe(practice.provider.id)
    const unknown = await app.inject({
      method: 'POST',
      url,
      headers: bearer(doctor.token),
      payload: { name: 'Lisinopril 10 mg', prescriberId: 2_000_000_000 },
    })
    expect(unknown.statusCode).toBe(422)
    expect(unknown.json().error.details).toBe('prescriberId is not a provider of your organization')
  })

  it('links an uploaded document to an encounter of the same patient only', async () => {
    const upload = (patientId: number) => {
      const body = multipart([
        ['title', 'Chest X-ray'],
        ['category', 'IMAGING'],
        ['encounterId', String(encounterId)],
        { fileName: 'xray.pdf', contentType: 'application/pdf', content: fileBytes('%PDF-1.7\n', 500) },
      ])
      return app.inject({
        method: 'POST',
        url: `/api/patients/${patientId}/documents`,
        headers: { ...bearer(practice.nurse.token), ...body.headers },
        payload: body.payload,
      })
    }
    const linked = await upload(practice.patient.id)
    expect(linked.statusCode).toBe(201)
    expect(linked.json().data.encounterId).toBe(encounterId)
    const wrong = await upload(await createPatient(app, practice.nurse))
    expect(wrong.statusCode).toBe(422)
  })
})
