import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  APPOINTMENT_STATUSES,
  APPOINTMENT_TRANSITIONS,
  type AppointmentStatus,
} from '../../../schemas/appointments.js'
import type { App } from '../../../src/app.js'
import { transactionWithEvents } from '../../../src/outbox/doorbell.js'
import { enqueueEvent } from '../../../src/outbox/enqueue.js'
import { buildTestApp } from '../../helpers/app.js'
import {
  bearer,
  createPatient,
  daysFromToday,
  everyDay,
  newOrganization,
  nthSunday,
  type TestUser,
} from '../../helpers/factories.js'
import {
  book,
  booked,
  createProvider,
  newPractice,
  outboxEvents,
  type Practice,
} from '../../helpers/scheduling.js'

let app: App

beforeAll(async () => {
  app = await buildTestApp()
})
afterAll(async () => {
  await app.close()
})

const DAY = daysFromToday(10)
const NEXT_YEAR = new Date().getUTCFullYear() + 1

const put = (user: TestUser, id: number, payload: object) =>
  app.inject({ method: 'PUT', url: `/api/appointments/${id}`, headers: bearer(user.token), payload })

const cancel = (user: TestUser, id: number, payload?: object) =>
  app.inject({
    method: 'POST',
    url: `/api/appointments/${id}/cancel`,
    headers: bearer(user.token),
    ...(payload ? { payload } : {}),
  })

describe('POST /api/appointments', () => {
  it('returns 201 SCHEDULED with the provider’s slot length, the instant in UTC and the booked zone', async () => {
    const practice = await newPractice(app, { timeZone: 'America/Chicago', slotMinutes: 20 })
    const response = await book(app, practice.nurse, {
      patientId: practice.patient.id,
      providerId: practice.provider.id,
      appointmentDate: `${NEXT_YEAR}-07-01`,
      appointmentTime: '09:40:00',
      reason: 'Blood pressure check',
    })
    expect(response.statusCode).toBe(201)
    expect(response.json()).toMatchObject({ success: true, message: 'Appointment created' })
    expect(response.json().data).toMatchObject({
      patientId: practice.patient.id,
      providerId: practice.provider.id,
      appointmentDate: `${NEXT_YEAR}-07-01`,
      appointmentTime: '09:40:00',
      timeZone: 'America/Chicago',
      startsAt: `${NEXT_YEAR}-07-01T14:40:00.000Z`,
      endsAt: `${NEXT_YEAR}-07-01T15:00:00.000Z`,
      duration: 20,
      appointmentType: 'OFFICE_VISIT',
      priority: 'ROUTINE',
      reason: 'Blood pressure check',
      notes: null,
      status: 'SCHEDULED',
      cancellationReason: null,
      cancelledAt: null,
    })
  })

  it('writes appointment.created with exactly the specification’s fields', async () => {
    const practice = await newPractice(app)
    const appointment = await booked(app, practice, DAY, '10:00:00', { notes: 'Bring the referral' })
    const events = await outboxEvents(app, practice.org.id)
    expect(events.map((e) => e.event_type)).toEqual(['patient.created', 'appointment.created'])
    expect(events[1]?.payload.data).toEqual({
      id: appointment.id,
      patientId: practice.patient.id,
      providerId: practice.provider.id,
      appointmentDate: DAY,
      appointmentTime: '10:00:00',
    })
  })

  it('returns 409 RES_002 for an overlap, and accepts back-to-back and another provider at the same time', async () => {
    const practice = await newPractice(app)
    await booked(app, practice, DAY, '10:00:00', { duration: 60 })
    const body = { patientId: practice.patient.id, providerId: practice.provider.id, appointmentDate: DAY }
    for (const appointmentTime of ['10:00:00', '10:30:00', '09:45:00', '10:59:00']) {
      const response = await book(app, practice.nurse, { ...body, appointmentTime })
      expect(response.statusCode, appointmentTime).toBe(409)
      expect(response.json().error).toEqual({
        code: 'RES_002',
        details: 'The provider already has an appointment overlapping this time',
      })
    }
    expect((await book(app, practice.nurse, { ...body, appointmentTime: '09:30:00' })).statusCode).toBe(201)
    expect((await book(app, practice.nurse, { ...body, appointmentTime: '11:00:00' })).statusCode).toBe(201)
    const colleague = await createProvider(app, practice.admin)
    const sameTime = await book(app, practice.nurse, {
      ...body,
      providerId: colleague.id,
      appointmentTime: '10:00:00',
    })
    expect(sameTime.statusCode).toBe(201)
  })

  it('books the time of a cancelled appointment again', async () => {
    const practice = await newPractice(app)
    const first = await booked(app, practice, DAY, '10:00:00')
    expect((await cancel(practice.nurse, first.id, { reason: 'Patient request' })).statusCode).toBe(200)
    await booked(app, practice, DAY, '10:00:00')
  })

  it.each([
    ['before opening', '08:30:00', 30],
    ['running past closing', '16:45:00', 30],
    ['in the lunch break', '12:00:00', 30],
    ['running into the lunch break', '11:45:00', 30],
  ])('returns 422 VAL_001 for a time %s', async (_label, appointmentTime, duration) => {
    const practice = await newPractice(app, { weeklyHours: everyDay(['09:00', '12:00'], ['13:00', '17:00']) })
    const response = await book(app, practice.nurse, {
      patientId: practice.patient.id,
      providerId: practice.provider.id,
      appointmentDate: DAY,
      appointmentTime,
      duration,
    })
    expect(response.statusCode).toBe(422)
    expect(response.json().error).toEqual({
      code: 'VAL_001',
      details: `The appointment is outside the provider’s working hours on ${DAY}`,
      fields: ['appointmentTime', 'duration'].map((path) => ({
        path,
        message: 'must keep the appointment within the provider’s working hours',
      })),
    })
  })

  it('accepts an appointment that ends exactly at closing time, or at the start of lunch', async () => {
    const practice = await newPractice(app, { weeklyHours: everyDay(['09:00', '12:00'], ['13:00', '17:00']) })
    const last = await booked(app, practice, DAY, '16:30:00')
    expect(last.endsAt).toBe(`${DAY}T17:00:00.000Z`)
    await booked(app, practice, DAY, '11:15:00', { duration: 45 })
  })

  it('follows dated exceptions: no booking on time off, booking in extra hours', async () => {
    const practice = await newPractice(app)
    const exception = (payload: object) =>
      app.inject({
        method: 'POST',
        url: `/api/providers/${practice.provider.id}/exceptions`,
        headers: bearer(practice.admin.token),
        payload,
      })
    expect(
      (await exception({ date: DAY, kind: 'TIME_OFF', startTime: '09:00:00', endTime: '10:00:00' }))
        .statusCode,
    ).toBe(201)
    expect(
      (await exception({ date: DAY, kind: 'EXTRA_HOURS', startTime: '18:00:00', endTime: '19:00:00' }))
        .statusCode,
    ).toBe(201)
    const body = { patientId: practice.patient.id, providerId: practice.provider.id, appointmentDate: DAY }
    expect((await book(app, practice.nurse, { ...body, appointmentTime: '09:30:00' })).statusCode).toBe(422)
    expect((await book(app, practice.nurse, { ...body, appointmentTime: '10:00:00' })).statusCode).toBe(201)
    expect((await book(app, practice.nurse, { ...body, appointmentTime: '18:30:00' })).statusCode).toBe(201)
  })

  it('returns 422 for a time in the past', async () => {
    const practice = await newPractice(app)
    const response = await book(app, practice.nurse, {
      patientId: practice.patient.id,
      providerId: practice.provider.id,
      appointmentDate: daysFromToday(-1),
      appointmentTime: '10:00:00',
    })
    expect(response.statusCode).toBe(422)
    expect(response.json().error).toEqual({
      code: 'VAL_001',
      details: 'The appointment would start in the past',
      fields: [
        { path: 'appointmentDate', message: 'must not be in the past' },
        { path: 'appointmentTime', message: 'must not be in the past' },
      ],
    })
  })

  describe('on daylight-saving change days (America/New_York)', () => {
    const spring = nthSunday(NEXT_YEAR, 3, 2)
    const fall = nthSunday(NEXT_YEAR, 11, 1)
    let practice: Practice
    beforeAll(async () => {
      practice = await newPractice(app, {
        timeZone: 'America/New_York',
        weeklyHours: everyDay(['00:00', '24:00']),
      })
    })
    const at = (appointmentDate: string, appointmentTime: string) =>
      book(app, practice.nurse, {
        patientId: practice.patient.id,
        providerId: practice.provider.id,
        appointmentDate,
        appointmentTime,
      })

    it('returns 422 for a time the clocks skip', async () => {
      const response = await at(spring, '02:30:00')
      expect(response.statusCode).toBe(422)
      expect(response.json().error).toEqual({
        code: 'VAL_001',
        details: `appointmentTime 02:30:00 does not exist on ${spring} in America/New_York: the clocks skip it for daylight saving time`,
        fields: [
          {
            path: 'appointmentTime',
            message: 'does not exist on that date in the provider’s time zone (daylight saving time)',
          },
        ],
      })
    })

    it('stores the real instants around the spring change: 01:30 for 30 minutes ends when 03:00 begins', async () => {
      const before = await at(spring, '01:30:00')
      expect(before.json().data).toMatchObject({
        startsAt: `${spring}T06:30:00.000Z`,
        endsAt: `${spring}T07:00:00.000Z`,
      })
      const after = await at(spring, '03:00:00')
      expect(after.statusCode).toBe(201)
      expect(after.json().data.startsAt).toBe(`${spring}T07:00:00.000Z`)
    })

    it('takes the earlier instant for a time that occurs twice, so it blocks that hour only once', async () => {
      const first = await at(fall, '01:00:00')
      expect(first.statusCode).toBe(201)
      expect(first.json().data).toMatchObject({
        startsAt: `${fall}T05:00:00.000Z`,
        endsAt: `${fall}T05:30:00.000Z`,
      })
      expect((await at(fall, '01:00:00')).statusCode).toBe(409)
      expect((await at(fall, '02:00:00')).json().data.startsAt).toBe(`${fall}T07:00:00.000Z`)
    })
  })

  it('returns 409 for an inactive provider', async () => {
    const practice = await newPractice(app, { active: false })
    const response = await book(app, practice.nurse, {
      patientId: practice.patient.id,
      providerId: practice.provider.id,
      appointmentDate: DAY,
      appointmentTime: '10:00:00',
    })
    expect(response.statusCode).toBe(409)
    expect(response.json().error.details).toBe(
      `Provider ${practice.provider.id} is inactive and takes no new appointments`,
    )
  })

  it('returns 404 for a patient or provider that does not exist, and 403 for another organization’s', async () => {
    const practice = await newPractice(app)
    const other = await newPractice(app)
    const body = {
      patientId: practice.patient.id,
      providerId: practice.provider.id,
      appointmentDate: DAY,
      appointmentTime: '10:00:00',
    }
    const cases: [object, number, string][] = [
      [{ patientId: 2_000_000_000 }, 404, 'Patient 2000000000 not found'],
      [{ providerId: 2_000_000_000 }, 404, 'Provider 2000000000 not found'],
      [{ patientId: other.patient.id }, 403, 'The patient belongs to another organization'],
      [{ providerId: other.provider.id }, 403, 'The provider belongs to another organization'],
    ]
    for (const [change, status, details] of cases) {
      const response = await book(app, practice.nurse, { ...body, ...change })
      expect(response.statusCode, details).toBe(status)
      expect(response.json().error.details).toBe(details)
    }
    expect(await outboxEvents(app, other.org.id)).toHaveLength(1)
  })

  it.each([
    ['a time without seconds', { appointmentTime: '10:00' }, 'appointmentTime'],
    ['a time with seconds', { appointmentTime: '10:00:30' }, 'appointmentTime'],
    ['an impossible date', { appointmentDate: '2031-02-30' }, 'appointmentDate'],
    ['a duration under 15 minutes', { duration: 10 }, 'duration'],
    ['a duration over 120 minutes', { duration: 121 }, 'duration'],
    ['an unknown type', { appointmentType: 'HOUSE_CALL' }, 'appointmentType'],
    ['an unknown field', { room: '4B' }, 'room'],
  ])('returns 422 for %s', async (_label, change, field) => {
    const practice = await newPractice(app)
    const response = await book(app, practice.nurse, {
      patientId: practice.patient.id,
      providerId: practice.provider.id,
      appointmentDate: DAY,
      appointmentTime: '10:00:00',
      ...change,
    })
    expect(response.statusCode).toBe(422)
    expect(response.json().error.details).toContain(field)
  })

  it('is for scheduling staff: 201 for FRONT_DESK, 403 AUTH_003 for BILLING', async () => {
    const practice = await newPractice(app)
    const booking = (time: string) => ({
      patientId: practice.patient.id,
      providerId: practice.provider.id,
      appointmentDate: DAY,
      appointmentTime: time,
    })
    const desk = await book(app, await practice.org.user('FRONT_DESK'), booking('10:00:00'))
    expect(desk.statusCode, desk.body).toBe(201)
    const billing = await book(app, await practice.org.user('BILLING'), booking('11:00:00'))
    expect(billing.statusCode).toBe(403)
    expect(billing.json().error.code).toBe('AUTH_003')
  })
})

describe('the front desk (FRONT_DESK)', () => {
  it('finds the patient, books, sees the day’s schedule, reschedules, checks in and cancels', async () => {
    const practice = await newPractice(app)
    const desk = await practice.org.user('FRONT_DESK')
    const patient = await app.inject({
      url: `/api/patients/${practice.patient.id}`,
      headers: bearer(desk.token),
    })
    const { lastName } = patient.json().data.identification
    const found = await app.inject({
      url: `/api/patients/search?q=${encodeURIComponent(lastName)}`,
      headers: bearer(desk.token),
    })
    expect(found.statusCode).toBe(200)
    expect(found.json().data.content.map((p: { id: number }) => p.id)).toContain(practice.patient.id)

    const slots = await app.inject({
      url: `/api/appointments/available-slots?providerId=${practice.provider.id}&date=${DAY}`,
      headers: bearer(desk.token),
    })
    expect(slots.statusCode).toBe(200)
    const booking = (time: string) => ({
      patientId: practice.patient.id,
      providerId: practice.provider.id,
      appointmentDate: DAY,
      appointmentTime: time,
      reason: 'Follow-up',
    })
    const first = await book(app, desk, booking('10:00:00'))
    expect(first.statusCode, first.body).toBe(201)
    const second = await book(app, desk, booking('14:00:00'))
    expect(second.statusCode, second.body).toBe(201)
    const [visit, other] = [first.json().data, second.json().data]

    const day = await app.inject({
      url: `/api/appointments?appointmentDate=${DAY}`,
      headers: bearer(desk.token),
    })
    expect(day.statusCode).toBe(200)
    expect(day.json().data.content.map((a: { id: number }) => a.id)).toEqual([visit.id, other.id])
    const schedule = await app.inject({
      url: `/api/providers/${practice.provider.id}/schedule?startDate=${DAY}&endDate=${DAY}`,
      headers: bearer(desk.token),
    })
    expect(schedule.statusCode).toBe(200)
    expect(
      (await app.inject({ url: `/api/appointments/${visit.id}`, headers: bearer(desk.token) })).statusCode,
    ).toBe(200)

    const moved = await put(desk, visit.id, { appointmentTime: '11:00:00' })
    expect(moved.statusCode, moved.body).toBe(200)
    expect(moved.json().data.appointmentTime).toBe('11:00:00')
    const confirmed = await app.inject({
      method: 'PATCH',
      url: `/api/appointments/${visit.id}`,
      headers: { ...bearer(desk.token), 'content-type': 'application/merge-patch+json' },
      payload: { status: 'CONFIRMED' },
    })
    expect(confirmed.statusCode, confirmed.body).toBe(200)
    const checkedIn = await put(desk, visit.id, { status: 'CHECKED_IN' })
    expect(checkedIn.statusCode, checkedIn.body).toBe(200)
    expect(checkedIn.json().data.status).toBe('CHECKED_IN')

    const cancelled = await cancel(desk, other.id, { reason: 'Patient called to cancel' })
    expect(cancelled.statusCode).toBe(200)
    expect(cancelled.json().data.status).toBe('CANCELLED')
  })

  it('is refused the visit’s encounter and the patient’s clinical records (403 AUTH_003)', async () => {
    const practice = await newPractice(app)
    const desk = await practice.org.user('FRONT_DESK')
    const patientId = practice.patient.id
    for (const url of [
      '/api/encounters',
      `/api/encounters?patientId=${patientId}`,
      `/api/patients/${patientId}/chart`,
      `/api/patients/${patientId}/vitals`,
      `/api/patients/${patientId}/documents`,
      '/api/patients',
    ]) {
      const response = await app.inject({ url, headers: bearer(desk.token) })
      expect(response.statusCode, url).toBe(403)
      expect(response.json().error.code, url).toBe('AUTH_003')
    }
  })
})

describe('PUT /api/appointments/{id}', () => {
  it('reschedules with the booking checks and emits appointment.updated', async () => {
    const practice = await newPractice(app)
    const appointment = await booked(app, practice, DAY, '10:00:00')
    const moved = await put(practice.nurse, appointment.id, { appointmentTime: '14:00:00', duration: 45 })
    expect(moved.statusCode).toBe(200)
    expect(moved.json().data).toMatchObject({
      appointmentTime: '14:00:00',
      startsAt: `${DAY}T14:00:00.000Z`,
      endsAt: `${DAY}T14:45:00.000Z`,
      duration: 45,
      status: 'SCHEDULED',
    })
    const tooLate = await put(practice.nurse, appointment.id, { appointmentTime: '16:30:00' })
    expect(tooLate.statusCode).toBe(422)
    const last = (await outboxEvents(app, practice.org.id)).at(-1)
    expect(last?.payload).toMatchObject({
      event: 'appointment.updated',
      data: { id: appointment.id, appointmentDate: DAY, appointmentTime: '14:00:00', status: 'SCHEDULED' },
    })
  })

  it('moves an appointment to another provider of the organization', async () => {
    const practice = await newPractice(app)
    const colleague = await createProvider(app, practice.admin, { timeZone: 'Europe/Berlin' })
    const appointment = await booked(app, practice, DAY, '10:00:00')
    const moved = await put(practice.nurse, appointment.id, { providerId: colleague.id })
    expect(moved.statusCode).toBe(200)
    expect(moved.json().data).toMatchObject({
      providerId: colleague.id,
      timeZone: 'Europe/Berlin',
      appointmentTime: '10:00:00',
    })
    expect(moved.json().data.startsAt).not.toBe(appointment.startsAt)
  })

  it('returns 409 and writes no event when the new time is taken', async () => {
    const practice = await newPractice(app)
    await booked(app, practice, DAY, '11:00:00')
    const appointment = await booked(app, practice, DAY, '10:00:00')
    const before = await outboxEvents(app, practice.org.id)
    const response = await put(practice.nurse, appointment.id, { appointmentTime: '11:15:00' })
    expect(response.statusCode).toBe(409)
    expect(await outboxEvents(app, practice.org.id)).toEqual(before)
    const reread = await app.inject({
      url: `/api/appointments/${appointment.id}`,
      headers: bearer(practice.nurse.token),
    })
    expect(reread.json().data).toEqual(appointment)
  })

  it('walks the lifecycle SCHEDULED → CONFIRMED → CHECKED_IN → IN_PROGRESS → COMPLETED', async () => {
    const practice = await newPractice(app)
    const appointment = await booked(app, practice, DAY, '10:00:00')
    for (const status of ['CONFIRMED', 'CHECKED_IN', 'IN_PROGRESS', 'COMPLETED']) {
      const response = await put(practice.nurse, appointment.id, { status })
      expect(response.statusCode, status).toBe(200)
      expect(response.json().data.status).toBe(status)
    }
    const events = (await outboxEvents(app, practice.org.id)).filter(
      (e) => e.event_type === 'appointment.updated',
    )
    expect(events.map((e) => e.payload.data.status)).toEqual([
      'CONFIRMED',
      'CHECKED_IN',
      'IN_PROGRESS',
      'COMPLETED',
    ])
  })

  it('returns 409 with a clear message for every transition the lifecycle table does not list', async () => {
    const practice = await newPractice(app, { weeklyHours: everyDay(['00:00', '24:00']) })
    const pathTo: Record<AppointmentStatus, AppointmentStatus[]> = {
      SCHEDULED: [],
      CONFIRMED: ['CONFIRMED'],
      CHECKED_IN: ['CONFIRMED', 'CHECKED_IN'],
      IN_PROGRESS: ['CONFIRMED', 'CHECKED_IN', 'IN_PROGRESS'],
      COMPLETED: ['CONFIRMED', 'CHECKED_IN', 'IN_PROGRESS', 'COMPLETED'],
      CANCELLED: [],
      NO_SHOW: ['NO_SHOW'],
    }
    let tried = 0
    for (const [index, from] of APPOINTMENT_STATUSES.entries()) {
      const appointment = await booked(app, practice, DAY, `${String(index).padStart(2, '0')}:00:00`)
      for (const status of pathTo[from])
        expect((await put(practice.nurse, appointment.id, { status })).statusCode).toBe(200)
      if (from === 'CANCELLED') expect((await cancel(practice.nurse, appointment.id)).statusCode).toBe(200)
      const illegal = APPOINTMENT_STATUSES.filter(
        (to) => to !== from && !APPOINTMENT_TRANSITIONS[from].includes(to),
      )
      for (const to of illegal) {
        const response =
          to === 'CANCELLED'
            ? await cancel(practice.nurse, appointment.id)
            : await put(practice.nurse, appointment.id, { status: to })
        expect(response.statusCode, `${from} → ${to}`).toBe(409)
        expect(response.json().error.code).toBe('RES_002')
        expect(response.json().error.details, `${from} → ${to}`).toMatch(
          new RegExp(`^The appointment is ${from} and cannot become ${to}; `),
        )
        tried += 1
      }
      const reread = await app.inject({
        url: `/api/appointments/${appointment.id}`,
        headers: bearer(practice.nurse.token),
      })
      expect(reread.json().data.status).toBe(from)
    }
    expect(tried).toBe(34)
  })

  it('returns 409 when rescheduling an appointment that is checked in', async () => {
    const practice = await newPractice(app)
    const appointment = await booked(app, practice, DAY, '10:00:00')
    await put(practice.nurse, appointment.id, { status: 'CONFIRMED' })
    await put(practice.nurse, appointment.id, { status: 'CHECKED_IN' })
    const response = await put(practice.nurse, appointment.id, { appointmentTime: '11:00:00' })
    expect(response.statusCode).toBe(409)
    expect(response.json().error.details).toBe(
      'The appointment is CHECKED_IN and cannot be rescheduled; only SCHEDULED and CONFIRMED ones can',
    )
    const notes = await put(practice.nurse, appointment.id, {
      appointmentTime: '10:00:00',
      notes: 'Arrived early',
    })
    expect(notes.statusCode).toBe(200)
  })

  it('returns 422 for status CANCELLED (cancel has its own operation) and for an empty body', async () => {
    const practice = await newPractice(app)
    const appointment = await booked(app, practice, DAY, '10:00:00')
    const cancelled = await put(practice.nurse, appointment.id, { status: 'CANCELLED' })
    expect(cancelled.statusCode).toBe(422)
    expect(cancelled.json().error.details).toContain('POST /api/appointments/{id}/cancel')
    expect((await put(practice.nurse, appointment.id, {})).statusCode).toBe(422)
  })
})

describe('POST /api/appointments/{id}/cancel', () => {
  it('cancels, records the reason and emits appointment.cancelled', async () => {
    const practice = await newPractice(app)
    const appointment = await booked(app, practice, DAY, '10:00:00')
    const response = await cancel(practice.nurse, appointment.id, {
      reason: 'Feeling better',
      notifyPatient: false,
    })
    expect(response.statusCode).toBe(200)
    expect(response.json().data).toMatchObject({ status: 'CANCELLED', cancellationReason: 'Feeling better' })
    expect(Date.parse(response.json().data.cancelledAt)).toBeGreaterThan(Date.now() - 60_000)
    const last = (await outboxEvents(app, practice.org.id)).at(-1)
    expect(last?.event_type).toBe('appointment.cancelled')
    expect(last?.payload.data).toEqual({
      id: appointment.id,
      patientId: practice.patient.id,
      providerId: practice.provider.id,
      appointmentDate: DAY,
      appointmentTime: '10:00:00',
      status: 'CANCELLED',
      reason: 'Feeling better',
      notifyPatient: false,
    })
  })

  it('accepts no body at all (notifyPatient defaults to true)', async () => {
    const practice = await newPractice(app)
    const appointment = await booked(app, practice, DAY, '10:00:00')
    const response = await cancel(practice.nurse, appointment.id)
    expect(response.statusCode).toBe(200)
    const last = (await outboxEvents(app, practice.org.id)).at(-1)
    expect(last?.payload.data).toMatchObject({ reason: null, notifyPatient: true })
  })

  it('returns 409 for a cancelled and for a completed appointment', async () => {
    const practice = await newPractice(app)
    const appointment = await booked(app, practice, DAY, '10:00:00')
    await cancel(practice.nurse, appointment.id)
    const again = await cancel(practice.nurse, appointment.id)
    expect(again.statusCode).toBe(409)
    expect(again.json().error.details).toBe(
      'The appointment is CANCELLED and cannot become CANCELLED; CANCELLED is final',
    )
    const done = await booked(app, practice, DAY, '11:00:00')
    for (const status of ['CONFIRMED', 'CHECKED_IN', 'IN_PROGRESS', 'COMPLETED'])
      await put(practice.nurse, done.id, { status })
    expect((await cancel(practice.nurse, done.id)).statusCode).toBe(409)
  })
})

describe('GET /api/appointments', () => {
  it('lists the organization’s appointments with filters and sorts', async () => {
    const practice = await newPractice(app)
    const secondPatient = await createPatient(app, practice.nurse)
    const later = daysFromToday(12)
    const a = await booked(app, practice, DAY, '10:00:00')
    const b = await booked(app, practice, later, '09:00:00', {
      patientId: secondPatient,
      priority: 'URGENT',
    })
    const c = await booked(app, practice, DAY, '09:00:00')
    await cancel(practice.nurse, c.id)
    await booked(app, await newPractice(app), DAY, '10:00:00')
    const list = async (query: string) => {
      const response = await app.inject({
        url: `/api/appointments?${query}`,
        headers: bearer(practice.nurse.token),
      })
      expect(response.statusCode, query).toBe(200)
      return response.json().data.content.map((appointment: { id: number }) => appointment.id)
    }
    expect(await list('')).toEqual([c.id, a.id, b.id])
    expect(await list('sort=appointmentDate,desc')).toEqual([b.id, a.id, c.id])
    expect(await list(`patientId=${secondPatient}`)).toEqual([b.id])
    expect(await list('status=CANCELLED')).toEqual([c.id])
    expect(await list('priority=URGENT')).toEqual([b.id])
    expect(await list(`dateFrom=${later}`)).toEqual([b.id])
    expect(await list(`dateTo=${DAY}&providerId=${practice.provider.id}`)).toEqual([c.id, a.id])
    expect(await list(`appointmentDate=${later}`)).toEqual([b.id])
  })

  it('returns 400 for dateTo before dateFrom and for an unknown status', async () => {
    const { nurse } = await newPractice(app)
    for (const query of [`dateFrom=${DAY}&dateTo=${daysFromToday(9)}`, 'status=LATE', 'sort=patientId,asc']) {
      const response = await app.inject({ url: `/api/appointments?${query}`, headers: bearer(nurse.token) })
      expect(response.statusCode, query).toBe(400)
      expect(response.json().error.code).toBe('VAL_001')
    }
  })
})

describe('another organization’s appointment', () => {
  it('is 403 AUTH_003 on every appointment route, a missing one 404, and nothing changes', async () => {
    const owner = await newPractice(app)
    const appointment = await booked(app, owner, DAY, '10:00:00')
    const outsider = await (await newOrganization(app)).user('ADMIN', 'PROVIDER', 'NURSE')
    const requests = (id: number) => [
      app.inject({ url: `/api/appointments/${id}`, headers: bearer(outsider.token) }),
      put(outsider, id, { status: 'CONFIRMED' }),
      put(outsider, id, { appointmentTime: '11:00:00' }),
      cancel(outsider, id, { reason: 'x' }),
    ]
    for (const response of await Promise.all(requests(appointment.id))) {
      expect(response.statusCode, response.body).toBe(403)
      expect(response.json().error).toEqual({
        code: 'AUTH_003',
        details: 'The appointment belongs to another organization',
      })
    }
    for (const response of await Promise.all(requests(2_000_000_000))) {
      expect(response.statusCode).toBe(404)
      expect(response.json().error.code).toBe('RES_001')
    }
    const reread = await app.inject({
      url: `/api/appointments/${appointment.id}`,
      headers: bearer(owner.nurse.token),
    })
    expect(reread.json().data).toEqual(appointment)
    const list = await app.inject({ url: '/api/appointments', headers: bearer(outsider.token) })
    expect(list.json().data.totalElements).toBe(0)
  })
})

describe('events and transactions', () => {
  it('writes no event when a booking fails, and none survives a rolled-back transaction', async () => {
    const practice = await newPractice(app)
    await booked(app, practice, DAY, '10:00:00')
    const before = await outboxEvents(app, practice.org.id)
    const clash = await book(app, practice.nurse, {
      patientId: practice.patient.id,
      providerId: practice.provider.id,
      appointmentDate: DAY,
      appointmentTime: '10:15:00',
    })
    expect(clash.statusCode).toBe(409)
    expect(await outboxEvents(app, practice.org.id)).toEqual(before)

    const rollback = transactionWithEvents(app.db, async (trx) => {
      await trx
        .updateTable('appointments')
        .set({ status: 'CONFIRMED' })
        .where('organization_id', '=', practice.org.id)
        .execute()
      await enqueueEvent(trx, practice.org.id, 'appointment.updated', {
        id: 1,
        patientId: practice.patient.id,
        providerId: practice.provider.id,
        appointmentDate: DAY,
        appointmentTime: '10:00:00',
        status: 'CONFIRMED',
      })
      throw new Error('abort')
    })
    await expect(rollback).rejects.toThrow('abort')
    expect(await outboxEvents(app, practice.org.id)).toEqual(before)
  })
})

describe('audit trail', () => {
  it('records appointment reads, bookings, changes and cancellations by id', async () => {
    const practice = await newPractice(app)
    const appointment = await booked(app, practice, DAY, '10:00:00')
    await app.inject({ url: `/api/appointments/${appointment.id}`, headers: bearer(practice.nurse.token) })
    await put(practice.nurse, appointment.id, { status: 'CONFIRMED' })
    await cancel(practice.nurse, appointment.id)
    await app.inject({ url: '/api/appointments', headers: bearer(practice.nurse.token) })
    await app.auditLog.flush()
    const rows = await app.db
      .selectFrom('audit_log')
      .select(['action', 'outcome', 'resource_type', 'resource_ids'])
      .where('organization_id', '=', practice.org.id)
      .where('resource_type', '=', 'appointment')
      .orderBy('id')
      .execute()
    expect(rows.map((r) => [r.action, r.outcome, r.resource_ids])).toEqual([
      ['CREATE', 'SUCCESS', [appointment.id]],
      ['READ', 'SUCCESS', [appointment.id]],
      ['UPDATE', 'SUCCESS', [appointment.id]],
      ['CANCEL', 'SUCCESS', [appointment.id]],
      ['LIST', 'SUCCESS', [appointment.id]],
    ])
  })
})
