import { expect } from 'vitest'
import type { App } from '../../../src/app.js'
import { bearer, type TestUser } from '../../helpers/factories.js'

type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE'

/** A call of `user` with a JSON body (a PATCH as a merge patch). */
export const callAs = (app: App, user: TestUser, method: Method, url: string, payload?: object) =>
  app.inject({
    method,
    url,
    headers: {
      ...bearer(user.token),
      ...(method === 'PATCH' ? { 'content-type': 'application/merge-patch+json' } : {}),
    },
    ...(payload ? { payload: method === 'PATCH' ? JSON.stringify(payload) : payload } : {}),
  })

export interface CreatedApp {
  id: number
  clientId: string
  name: string
  type: 'public' | 'confidential'
  redirectUris: string[]
  scopes: string[]
  launchUrl: string | null
  hasSecret: boolean
  active: boolean
  clientSecret?: string
}

export const publicAppBody = (overrides: object = {}) => ({
  name: 'Growth charts',
  type: 'public',
  redirectUris: ['https://charts.example.com/callback'],
  scopes: ['launch', 'openid', 'fhirUser', 'patient/Patient.rs', 'patient/Observation.rs', 'offline_access'],
  launchUrl: 'https://charts.example.com/launch',
  ...overrides,
})

export async function registeredApp(app: App, admin: TestUser, body: object = publicAppBody()) {
  const response = await callAs(app, admin, 'POST', '/api/smart-apps', body)
  expect(response.statusCode, response.body).toBe(201)
  return response.json().data as CreatedApp
}
