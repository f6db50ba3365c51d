import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../src/app.js'
import { buildTestApp } from '../helpers/app.js'
import { bearer, daysFromToday, type TestUser } from '../helpers/factories.js'
import { booked, newPractice } from '../helpers/scheduling.js'

let app: App

beforeAll(async () => {
  app = await buildTestApp()
})
afterAll(async () => {
  await app.close()
})

const ATTEMPTS = 20
const MERGE_PATCH = { 'content-type': 'application/merge-patch+json' }

/** Sends the same conditional write ATTEMPTS times at once; expects one 2xx and the rest 412 RES_003. */
async function race(
  user: TestUser,
  request: (i: number) => {
    method: 'PUT' | 'PATCH' | 'POST'
    url: string
    payload?: object
    headers?: object
  },
) {
  const responses = await Promise.all(
    Array.from({ length: ATTEMPTS }, (_, i) => {
      const { headers, ...rest } = request(i)
      return app.inject({ ...rest, headers: { ...bearer(user.token), 'if-match': 'W/"1"', ...headers } })
    }),
  )
  const statuses = responses.map((response) => response.statusCode)
  expect(
    statuses.filter((status) => status >= 200 && status < 300),
    JSON.stringify(statuses),
  ).toHaveLength(1)
  expect(statuses.filter((status) => status === 412)).toHaveLength(ATTEMPTS - 1)
  for (const response of responses.filter((r) => r.statusCode === 412)) {
    expect(response.json().error.code).toBe('RES_003')
  }
  return responses.find((response) => response.statusCode < 300)
}

describe('concurrent conditional writes on PostgreSQL (scheduling and encounters)', () => {
  it('lets exactly one of 20 provider PATCHes with the same If-Match succeed', async () => {
    const { admin, provider } = await newPractice(app)
    const winner = await race(admin, (i) => ({
      method: 'PATCH',
      url: `/api/providers/${provider.id}`,
      payload: { specialty: `Specialty ${i}` },
      headers: MERGE_PATCH,
    }))
    const read = await app.inject({ url: `/api/providers/${provider.id}`, headers: bearer(admin.token) })
    expect(read.json().data).toMatchObject({ version: 2, specialty: winner?.json().data.specialty })
  })

  it('lets exactly one of 20 schedule writes (hours and exceptions) with the same If-Match succeed', async () => {
    const { admin, provider } = await newPractice(app)
    await race(admin, (i) =>
      i % 2 === 0
        ? {
            method: 'PUT',
            url: `/api/providers/${provider.id}/hours`,
            payload: { weeklyHours: [{ dayOfWeek: 'MONDAY', startTime: '08:00:00', endTime: '12:00:00' }] },
          }
        : {
            method: 'POST',
            url: `/api/providers/${provider.id}/exceptions`,
            payload: { date: daysFromToday(20 + i), kind: 'TIME_OFF' },
          },
    )
    const read = await app.inject({ url: `/api/providers/${provider.id}`, headers: bearer(admin.token) })
    expect(read.json().data.version).toBe(2)
  })

  it('lets exactly one of 20 appointment updates and cancellations with the same If-Match succeed', async () => {
    const practice = await newPractice(app)
    const appointment = await booked(app, practice, daysFromToday(9), '10:00:00')
    const url = `/api/appointments/${appointment.id}`
    await race(practice.nurse, (i) =>
      i % 2 === 0
        ? { method: 'PUT', url, payload: { notes: `Note ${i}` } }
        : { method: 'POST', url: `${url}/cancel`, payload: { reason: `Reason ${i}` } },
    )
    const read = await app.inject({ url, headers: bearer(practice.nurse.token) })
    expect(read.json().data.version).toBe(2)
  })

  it('lets exactly one of 20 encounter edits with the same If-Match succeed', async () => {
    const practice = await newPractice(app)
    const doctor = await practice.org.user('PROVIDER')
    const created = await app.inject({
      method: 'POST',
      url: '/api/encounters',
      headers: bearer(doctor.token),
      payload: {
        patientId: practice.patient.id,
        providerId: practice.provider.id,
        encounterDate: daysFromToday(0),
        encounterType: 'OFFICE_VISIT',
      },
    })
    expect(created.statusCode, created.body).toBe(201)
    const url = `/api/encounters/${created.json().data.id}`
    await race(doctor, (i) =>
      i % 2 === 0
        ? { method: 'PATCH', url, payload: { chiefComplaint: `Complaint ${i}` }, headers: MERGE_PATCH }
        : { method: 'POST', url: `${url}/sign` },
    )
    const read = await app.inject({ url, headers: bearer(doctor.token) })
    expect(read.json().data.version).toBe(2)
  })
})
