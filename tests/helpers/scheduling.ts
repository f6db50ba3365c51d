import { expect } from 'vitest'
import type { App } from '../../src/app.js'
import {
  bearer,
  createPatient,
  newOrganization,
  providerBody,
  type TestOrganization,
  type TestUser,
} from './factories.js'

export async function createProvider(
  app: App,
  admin: TestUser,
  overrides: Record<string, unknown> = {},
): Promise<{ id: number; timeZone: string; slotMinutes: number }> {
  const response = await app.inject({
    method: 'POST',
    url: '/api/providers',
    headers: bearer(admin.token),
    payload: providerBody(overrides),
  })
  expect(response.statusCode, response.body).toBe(201)
  return response.json().data
}

export interface Practice {
  org: TestOrganization
  admin: TestUser
  nurse: TestUser
  provider: { id: number; timeZone: string; slotMinutes: number }
  patient: { id: number }
}

/** An organization with an admin, a nurse (who books), one provider and one patient. */
export async function newPractice(
  app: App,
  providerOverrides: Record<string, unknown> = {},
): Promise<Practice> {
  const org = await newOrganization(app)
  const admin = await org.user('ADMIN')
  const nurse = await org.user('NURSE')
  const provider = await createProvider(app, admin, providerOverrides)
  const patient = { id: await createPatient(app, nurse) }
  return { org, admin, nurse, provider, patient }
}

export interface Clinic extends Practice {
  /** The PROVIDER user linked to the practice's provider record. */
  doctor: TestUser
}

/** A PROVIDER user of the practice, linked to its provider record (so that it writes that provider's notes). */
export async function linkedDoctor(app: App, practice: Practice): Promise<TestUser> {
  const doctor = await practice.org.user('PROVIDER')
  await app.db
    .updateTable('providers')
    .set({ user_id: doctor.id })
    .where('id', '=', practice.provider.id)
    .execute()
  return doctor
}

/** A practice (see newPractice) whose provider signs in as `doctor`. */
export async function newClinic(app: App, providerOverrides: Record<string, unknown> = {}): Promise<Clinic> {
  const practice = await newPractice(app, providerOverrides)
  return { ...practice, doctor: await linkedDoctor(app, practice) }
}

export function book(app: App, user: TestUser, payload: Record<string, unknown>) {
  return app.inject({ method: 'POST', url: '/api/appointments', headers: bearer(user.token), payload })
}

/** Books and expects 201; returns the appointment. */
export async function booked(app: App, practice: Practice, date: string, time: string, extra: object = {}) {
  const response = await book(app, practice.nurse, {
    patientId: practice.patient.id,
    providerId: practice.provider.id,
    appointmentDate: date,
    appointmentTime: time,
    ...extra,
  })
  expect(response.statusCode, response.body).toBe(201)
  return response.json().data
}

export async function outboxEvents(app: App, organizationId: number) {
  return app.db
    .selectFrom('outbox_events')
    .select(['event_type', 'payload'])
    .where('organization_id', '=', organizationId)
    .orderBy('id')
    .execute()
}
