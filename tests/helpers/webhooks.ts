import { expect } from 'vitest'
import type { App } from '../../src/app.js'
import { bearer, type TestUser } from './factories.js'

/** Registers a webhook through the API and returns its record (with the generated secret, if any). */
export async function registerWebhook(
  app: App,
  admin: TestUser,
  body: { url: string; events?: string[]; secret?: string },
) {
  const response = await app.inject({
    method: 'POST',
    url: '/api/webhooks',
    headers: bearer(admin.token),
    payload: { ...body, events: body.events ?? ['*'] },
  })
  expect(response.statusCode, response.body).toBe(201)
  return response.json().data as { id: number; secret: string | null; url: string; events: string[] }
}

export async function createPatientAs(app: App, user: TestUser, body: object) {
  const response = await app.inject({
    method: 'POST',
    url: '/api/patients',
    headers: bearer(user.token),
    payload: body,
  })
  expect(response.statusCode, response.body).toBe(201)
  return response.json().data as { id: number; mrn: string }
}
