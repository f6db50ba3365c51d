import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../src/app.js'
import { buildTestApp } from '../helpers/app.js'
import { bearer, createPatient, daysFromToday, everyDay } from '../helpers/factories.js'
import { book, newPractice, outboxEvents } from '../helpers/scheduling.js'

let app: App

beforeAll(async () => {
  app = await buildTestApp()
})
afterAll(async () => {
  await app.close()
})

const DAY = daysFromToday(10)
const ATTEMPTS = 24
const timeAt = (minutes: number) =>
  `${String(Math.floor(minutes / 60)).padStart(2, '0')}:${String(minutes % 60).padStart(2, '0')}:00`

describe('double booking on PostgreSQL', () => {
  it('lets exactly one of many simultaneous overlapping bookings succeed; the rest get 409 RES_002', async () => {
    const practice = await newPractice(app, { weeklyHours: everyDay(['08:00', '18:00']) })
    const patients = await Promise.all(Array.from({ length: 4 }, () => createPatient(app, practice.nurse)))
    // Hour-long bookings starting between 09:40 and 10:03: all contain 10:03–10:40, so only one fits.
    const attempts = await Promise.all(
      Array.from({ length: ATTEMPTS }, (_, i) =>
        book(app, practice.nurse, {
          patientId: patients[i % patients.length],
          providerId: practice.provider.id,
          appointmentDate: DAY,
          appointmentTime: timeAt(9 * 60 + 40 + i),
          duration: 60,
        }),
      ),
    )
    const statuses = attempts.map((response) => response.statusCode)
    expect(statuses.filter((status) => status === 201)).toHaveLength(1)
    expect(statuses.filter((status) => status === 409)).toHaveLength(ATTEMPTS - 1)
    for (const response of attempts.filter((r) => r.statusCode === 409)) {
      expect(response.json().error).toEqual({
        code: 'RES_002',
        details: 'The provider already has an appointment overlapping this time',
      })
    }
    const created = (await outboxEvents(app, practice.org.id)).filter(
      (e) => e.event_type === 'appointment.created',
    )
    expect(created).toHaveLength(1)
    const rows = await app.db
      .selectFrom('appointments')
      .select('id')
      .where('provider_id', '=', practice.provider.id)
      .execute()
    expect(rows).toHaveLength(1)
  })

  it('lets simultaneous reschedules into the same free time collide the same way', async () => {
    const practice = await newPractice(app, { weeklyHours: everyDay(['08:00', '18:00']) })
    const ids: number[] = []
    for (let hour = 8; hour < 16; hour++) {
      const response = await book(app, practice.nurse, {
        patientId: practice.patient.id,
        providerId: practice.provider.id,
        appointmentDate: DAY,
        appointmentTime: `${String(hour).padStart(2, '0')}:00:00`,
      })
      expect(response.statusCode).toBe(201)
      ids.push(response.json().data.id)
    }
    const moves = await Promise.all(
      ids.map((id) =>
        app.inject({
          method: 'PUT',
          url: `/api/appointments/${id}`,
          headers: bearer(practice.nurse.token),
          payload: { appointmentTime: '17:00:00' },
        }),
      ),
    )
    expect(moves.filter((response) => response.statusCode === 200)).toHaveLength(1)
    expect(moves.filter((response) => response.statusCode === 409)).toHaveLength(ids.length - 1)
  })

  it('books every one of many simultaneous requests for distinct, back-to-back times', async () => {
    const practice = await newPractice(app, { weeklyHours: everyDay(['08:00', '18:00']) })
    const attempts = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        book(app, practice.nurse, {
          patientId: practice.patient.id,
          providerId: practice.provider.id,
          appointmentDate: DAY,
          appointmentTime: timeAt(8 * 60 + i * 30),
        }),
      ),
    )
    expect(attempts.map((response) => response.statusCode)).toEqual(Array(20).fill(201))
  })
})
