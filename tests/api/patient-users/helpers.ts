import { expect } from 'vitest'
import type { App } from '../../../src/app.js'
import { bearer, type TestUser } from '../../helpers/factories.js'

const REALM_TOKEN = '/realms/ehr/protocol/openid-connect/token'
export const PATIENT_PASSWORD = 'my own patient passphrase'

/** Invites `patientId` as `user`; returns the response. */
export const invite = (app: App, user: TestUser, patientId: number, payload: object) =>
  app.inject({
    method: 'POST',
    url: `/api/patients/${patientId}/account`,
    headers: bearer(user.token),
    payload,
  })

/** The password grant of the embedded issuer, as a patient's app would ask for tokens. */
export const passwordGrant = (app: App, username: string, password: string) =>
  app.inject({
    method: 'POST',
    url: REALM_TOKEN,
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({
      grant_type: 'password',
      client_id: 'ehr-api',
      username,
      password,
    }).toString(),
  })

/**
 * Invites the patient with a temporary password, has the patient replace it, and signs them in with
 * the password grant: the account, its e-mail address and a token set.
 */
export async function signedInPatient(app: App, frontDesk: TestUser, patientId: number, email: string) {
  const invited = await invite(app, frontDesk, patientId, { email, invite: 'temporaryPassword' })
  expect(invited.statusCode, invited.body).toBe(201)
  const account = invited.json().data as { id: number; temporaryPassword: string }
  const changed = await app.inject({
    method: 'POST',
    url: '/api/auth/change-password',
    payload: { username: email, currentPassword: account.temporaryPassword, newPassword: PATIENT_PASSWORD },
  })
  expect(changed.statusCode, changed.body).toBe(200)
  const granted = await passwordGrant(app, email, PATIENT_PASSWORD)
  expect(granted.statusCode, granted.body).toBe(200)
  const tokens = granted.json() as { access_token: string; refresh_token: string }
  return { id: account.id, email, token: tokens.access_token, refreshToken: tokens.refresh_token }
}
