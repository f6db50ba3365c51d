import { jwtVerify } from 'jose'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { buildTestApp } from '../../helpers/app.js'
import {
  bearer,
  createPatient,
  daysFromToday,
  newOrganization,
  type TestUser,
} from '../../helpers/factories.js'
import { booked, newPractice, type Practice } from '../../helpers/scheduling.js'

const jitsi = {
  JITSI_DOMAIN: 'meet.example.org',
  JITSI_APP_ID: 'ehr-app',
  JITSI_APP_SECRET: 'test-jitsi-app-secret-of-34-chars!',
}

let app: App
let practice: Practice
let admin: TestUser
let doctor: TestUser
let day = 1

beforeAll(async () => {
  app = await buildTestApp(jitsi)
  practice = await newPractice(app)
  admin = practice.admin
  doctor = await practice.org.user('PROVIDER')
  await app.db
    .updateTable('providers')
    .set({ user_id: doctor.id })
    .where('id', '=', practice.provider.id)
    .execute()
})
afterAll(async () => {
  await app.close()
})

const post = (user: TestUser, url: string, payload: object) =>
  app.inject({ method: 'POST', url, headers: bearer(user.token), payload })
const appointment = () => booked(app, practice, daysFromToday(day++), '10:00:00')
const openRoom = async (payload: object, user = practice.nurse) =>
  post(user, '/api/telehealth/rooms', payload)
const join = (user: TestUser, roomName: string, identity: string, extra: object = {}) =>
  post(user, '/api/telehealth/jitsi/join', { roomName, identity, ...extra })

describe('POST /api/telehealth/rooms', () => {
  it('creates the room of an appointment once and returns it afterwards', async () => {
    const { id } = await appointment()
    const created = await openRoom({ appointmentId: id })
    expect(created.statusCode).toBe(201)
    const room = created.json().data
    expect(room).toMatchObject({
      appointmentId: id,
      providerId: practice.provider.id,
      patientId: practice.patient.id,
      status: 'OPEN',
      createdBy: practice.nurse.id,
      closedAt: null,
    })
    expect(room.name).toMatch(/^ehr-[a-z0-9]{24}$/)
    const again = await openRoom({ appointmentId: id })
    expect(again.statusCode).toBe(200)
    expect(again.json().data).toEqual(room)
  })

  it('reuses the open ad hoc room of a provider and patient, and makes a new one after it closes', async () => {
    const body = { providerId: practice.provider.id, patientId: practice.patient.id }
    const first = (await openRoom(body)).json().data
    expect((await openRoom(body)).json().data.id).toBe(first.id)
    const closed = await post(doctor, `/api/telehealth/rooms/${first.id}/close`, {})
    expect(closed.json().data).toMatchObject({ status: 'CLOSED' })
    const next = await openRoom(body)
    expect(next.statusCode).toBe(201)
    expect(next.json().data.id).not.toBe(first.id)
  })

  it('answers 422 for neither or both forms, 409 for a cancelled appointment, 403 for another organization', async () => {
    expect((await openRoom({})).statusCode).toBe(422)
    expect((await openRoom({ appointmentId: 1, providerId: 1, patientId: 1 })).statusCode).toBe(422)
    const { id } = await appointment()
    await post(practice.nurse, `/api/appointments/${id}/cancel`, { reason: 'Sick' })
    expect((await openRoom({ appointmentId: id })).statusCode).toBe(409)
    const outsider = await (await newOrganization(app)).user('NURSE')
    const { id: other } = await appointment()
    expect((await openRoom({ appointmentId: other }, outsider)).statusCode).toBe(403)
  })
})

describe('POST /api/telehealth/jitsi/join', () => {
  it('issues a Jitsi token that an independent JWT library verifies, with the participant and moderation', async () => {
    const { id } = await appointment()
    const room = (await openRoom({ appointmentId: id })).json().data
    const response = await join(practice.nurse, room.name, `patient-${practice.patient.id}`, {
      ttlSeconds: 600,
    })
    expect(response.statusCode).toBe(200)
    const result = response.json().data
    expect(result).toMatchObject({
      roomName: room.name,
      identity: `patient-${practice.patient.id}`,
      expiresIn: 600,
    })
    expect(result.meetingUrl).toBe(`https://meet.example.org/${room.name}?jwt=${result.token}`)
    const { payload, protectedHeader } = await jwtVerify(
      result.token,
      new TextEncoder().encode(jitsi.JITSI_APP_SECRET),
      {
        audience: 'jitsi',
        issuer: 'ehr-app',
        subject: 'meet.example.org',
        algorithms: ['HS256'],
      },
    )
    expect(protectedHeader.alg).toBe('HS256')
    expect(payload).toMatchObject({
      room: room.name,
      context: { user: { id: `patient-${practice.patient.id}`, moderator: false } },
    })
    expect((payload.context as { user: { email?: string } }).user.email).toBeUndefined()
    expect((payload.exp ?? 0) - Math.floor(Date.now() / 1000)).toBeGreaterThan(590)
    expect(payload.nbf).toBeLessThanOrEqual(Math.floor(Date.now() / 1000))

    const provider = await join(doctor, room.name, `provider-${practice.provider.id}`)
    expect(provider.statusCode).toBe(200)
    const providerClaims = (
      await jwtVerify(provider.json().data.token, new TextEncoder().encode(jitsi.JITSI_APP_SECRET))
    ).payload
    expect(providerClaims).toMatchObject({ context: { user: { moderator: true } } })
    expect((await join(admin, room.name, `provider-${practice.provider.id}`)).statusCode).toBe(200)
    expect((await join(doctor, room.name, `staff-${doctor.id}`)).statusCode).toBe(200)
  })

  it('refuses identities the caller may not act for, and other patients or providers', async () => {
    const { id } = await appointment()
    const room = (await openRoom({ appointmentId: id })).json().data
    expect((await join(practice.nurse, room.name, `provider-${practice.provider.id}`)).statusCode).toBe(403)
    expect((await join(practice.nurse, room.name, `staff-${doctor.id}`)).statusCode).toBe(403)
    const stranger = await createPatient(app, practice.nurse)
    expect((await join(practice.nurse, room.name, `patient-${stranger}`)).statusCode).toBe(403)
    const outsider = await (await newOrganization(app)).user('NURSE')
    expect((await join(outsider, room.name, `staff-${outsider.id}`)).statusCode).toBe(403)
    expect((await join(practice.nurse, room.name, 'patient-x')).statusCode).toBe(422)
    expect(
      (await join(practice.nurse, room.name, `staff-${practice.nurse.id}`, { ttlSeconds: 5 })).statusCode,
    ).toBe(422)
  })

  it('answers 404 for an unknown room and 409 for a closed room or a cancelled appointment', async () => {
    expect(
      (await join(practice.nurse, 'ehr-doesnotexist000000000000', `staff-${practice.nurse.id}`)).statusCode,
    ).toBe(404)
    const first = await appointment()
    const closing = (await openRoom({ appointmentId: first.id })).json().data
    await post(doctor, `/api/telehealth/rooms/${closing.id}/close`, {})
    expect((await join(practice.nurse, closing.name, `staff-${practice.nurse.id}`)).statusCode).toBe(409)
    const second = await appointment()
    const cancelled = (await openRoom({ appointmentId: second.id })).json().data
    await post(practice.nurse, `/api/appointments/${second.id}/cancel`, {})
    const response = await join(practice.nurse, cancelled.name, `staff-${practice.nurse.id}`)
    expect(response.statusCode).toBe(409)
    expect(response.json().error.details).toBe('The appointment of this room is cancelled')
  })
})

describe('without the Jitsi settings', () => {
  it('answers 503 with a clear message instead of issuing an unsigned link', async () => {
    const plain = await buildTestApp()
    try {
      const setup = await newPractice(plain)
      const room = (
        await plain.inject({
          method: 'POST',
          url: '/api/telehealth/rooms',
          headers: bearer(setup.nurse.token),
          payload: { providerId: setup.provider.id, patientId: setup.patient.id },
        })
      ).json().data
      const response = await plain.inject({
        method: 'POST',
        url: '/api/telehealth/jitsi/join',
        headers: bearer(setup.nurse.token),
        payload: { roomName: room.name, identity: `staff-${setup.nurse.id}` },
      })
      expect(response.statusCode).toBe(503)
      expect(response.json()).toMatchObject({ message: 'Telehealth unavailable', error: { code: 'SYS_001' } })
    } finally {
      await plain.close()
    }
  })
})

describe('another organization on every room route', () => {
  it('gets 403 for reading and closing a room too', async () => {
    const room = (await openRoom({ providerId: practice.provider.id, patientId: practice.patient.id })).json()
      .data
    const outsider = await (await newOrganization(app)).user('ADMIN', 'PROVIDER')
    expect(
      (await app.inject({ url: `/api/telehealth/rooms/${room.id}`, headers: bearer(outsider.token) }))
        .statusCode,
    ).toBe(403)
    expect((await post(outsider, `/api/telehealth/rooms/${room.id}/close`, {})).statusCode).toBe(403)
    const still = await app.inject({
      url: `/api/telehealth/rooms/${room.id}`,
      headers: bearer(practice.nurse.token),
    })
    expect(still.json().data.status).toBe('OPEN')
  })
})
