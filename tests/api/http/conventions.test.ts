import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { AppError } from '../../../src/errors.js'
import { buildTestApp } from '../../helpers/app.js'
import { bearer, newOrganization } from '../../helpers/factories.js'

let app: App

beforeAll(async () => {
  app = await buildTestApp({}, (instance) => {
    instance.get('/test/boom', async () => {
      throw new Error('secret internals: SELECT * FROM patients')
    })
    instance.get('/test/unique', async () => {
      throw Object.assign(new Error('duplicate key value violates unique constraint'), {
        code: '23505',
        constraint: 'patients_organization_mrn_key',
        detail: 'Key (mrn)=(PHI-VALUE) already exists.',
      })
    })
    instance.get('/test/app-error', async () => {
      throw new AppError('RES_001', 'Thing 7 not found')
    })
  })
})
afterAll(async () => {
  await app.close()
})

describe('the error envelope', () => {
  it('returns 500 SYS_001 without the error text, stack or SQL', async () => {
    const response = await app.inject({ url: '/test/boom', headers: { 'x-request-id': 'trace-500' } })
    expect(response.statusCode).toBe(500)
    const body = response.json()
    expect(body).toEqual({
      success: false,
      message: 'Internal server error',
      error: { code: 'SYS_001', details: 'An unexpected error occurred; quote request id trace-500' },
    })
    expect(response.body).not.toMatch(/secret|SELECT|at .*\.ts/)
  })

  it('maps a unique violation to 409 RES_002 without echoing the driver detail', async () => {
    const response = await app.inject({ url: '/test/unique' })
    expect(response.statusCode).toBe(409)
    expect(response.json().error.code).toBe('RES_002')
    expect(response.body).not.toContain('PHI-VALUE')
  })

  it('sends an AppError with its status, code and details', async () => {
    const response = await app.inject({ url: '/test/app-error' })
    expect(response.statusCode).toBe(404)
    expect(response.json()).toEqual({
      success: false,
      message: 'Resource not found',
      error: { code: 'RES_001', details: 'Thing 7 not found' },
    })
  })

  it('returns 404 RES_001 in the envelope for an unknown route', async () => {
    const user = await (await newOrganization(app)).user('PROVIDER')
    const response = await app.inject({ url: '/api/nothing-here?name=Jane', headers: bearer(user.token) })
    expect(response.statusCode).toBe(404)
    expect(response.json()).toEqual({
      success: false,
      message: 'Route not found',
      error: { code: 'RES_001', details: 'No route GET /api/nothing-here' },
    })
  })
})

describe('X-Request-Id', () => {
  it('echoes a safe caller id and generates one otherwise', async () => {
    const kept = await app.inject({
      url: '/actuator/health/liveness',
      headers: { 'x-request-id': 'abc-123.x:y' },
    })
    expect(kept.headers['x-request-id']).toBe('abc-123.x:y')
    const generated = await app.inject({ url: '/actuator/health/liveness' })
    expect(generated.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/)
    const unsafe = await app.inject({
      url: '/actuator/health/liveness',
      headers: { 'x-request-id': 'bad id\u0007<script>' },
    })
    expect(unsafe.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/)
  })

  it('is present on error responses too', async () => {
    const response = await app.inject({ url: '/api/patients', headers: { 'x-request-id': 'err-1' } })
    expect(response.statusCode).toBe(401)
    expect(response.headers['x-request-id']).toBe('err-1')
  })
})
