import { spawnSync } from 'node:child_process'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../src/app.js'
import { buildTestApp } from '../helpers/app.js'
import { bearer, newOrganization, patientBody, TEST_PASSWORD } from '../helpers/factories.js'
import { type Receiver, startReceiver } from '../helpers/servers/webhook-receiver.js'
import { createPatientAs, registerWebhook } from '../helpers/webhooks.js'

let app: App
let receiver: Receiver

beforeAll(async () => {
  receiver = await startReceiver(() => ({ status: 204 }))
  app = await buildTestApp({ WEBHOOK_ALLOW_HTTP: 'true', WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' })
})
afterAll(async () => {
  await app.close()
  await receiver.close()
})

describe('GET /actuator/prometheus', () => {
  it('passes `promtool check metrics` after traffic of every kind', async () => {
    const organization = await newOrganization(app)
    const admin = await organization.user('ADMIN', 'PROVIDER')
    const login = (password: string) =>
      app.inject({ method: 'POST', url: '/api/auth/login', payload: { username: admin.email, password } })
    expect((await login(TEST_PASSWORD)).statusCode).toBe(200)
    expect((await login('wrong-password-here')).statusCode).toBe(401)
    await registerWebhook(app, admin, { url: `http://127.0.0.1:${receiver.port}/hooks` })
    await createPatientAs(app, admin, patientBody())
    await app.outbox.drainOnce()
    await app.inject({ url: '/api/patients/424242', headers: bearer(admin.token) })
    await app.inject({ url: '/api/patients', headers: bearer('forged') })
    await app.auditLog.flush()
    const scrape = await app.inject({ url: '/actuator/prometheus' })
    expect(scrape.statusCode).toBe(200)
    expect(scrape.body).toMatch(/^ehr_auth_logins_total\{outcome="failure"\} 1$/m)
    expect(scrape.body).toMatch(
      /^ehr_webhook_deliveries_total\{event="patient.created",outcome="succeeded"\} 1$/m,
    )
    expect(scrape.body).toMatch(/^http_request_duration_seconds_bucket\{[^}]*status_class="4xx"/m)

    const check = spawnSync('promtool', ['check', 'metrics'], {
      input: scrape.body,
      encoding: 'utf8',
      timeout: 10_000,
    })
    expect(check.error).toBeUndefined()
    expect(`${check.stdout}${check.stderr}`).toBe('')
    expect(check.status).toBe(0)
  })
})
