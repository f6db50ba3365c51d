import { spawnSync } from 'node:child_process'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../src/app.js'
import { buildTestApp } from '../helpers/app.js'
import { bearer, newOrganization, TEST_PASSWORD } from '../helpers/factories.js'

let app: App

beforeAll(async () => {
  app = await buildTestApp()
})
afterAll(async () => {
  await app.close()
})

describe('GET /actuator/prometheus', () => {
  it('passes `promtool check metrics` after some traffic', async () => {
    const user = await (await newOrganization(app)).user('PROVIDER')
    await app.inject({
      method: 'POST',
      url: '/api/auth/login',
      payload: { username: user.email, password: TEST_PASSWORD },
    })
    await app.inject({
      method: 'POST',
      url: '/api/auth/login',
      payload: { username: user.email, password: 'wrong-password-here' },
    })
    await app.inject({ url: '/api/patients', headers: bearer(user.token) })
    await app.inject({ url: '/api/patients/424242', headers: bearer(user.token) })
    await app.inject({ url: '/api/patients', headers: bearer('forged') })
    await app.auditLog.flush()
    const scrape = await app.inject({ url: '/actuator/prometheus' })
    expect(scrape.statusCode).toBe(200)
    expect(scrape.body).toContain('ehr_auth_logins_total{outcome="failure"} 1')

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
