import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ROUTE_ACCESS } from '../../src/access/route-access.js'
import type { App } from '../../src/app.js'
import { buildTestApp } from '../helpers/app.js'
import { bearer, newOrganization } from '../helpers/factories.js'

let app: App

beforeAll(async () => {
  // Every route is called once without a token, all from one address: more calls than the default
  // anonymous rate limit allows in its window (the limiter has tests of its own).
  app = await buildTestApp({ RATE_LIMIT_ANONYMOUS: '10000' })
})
afterAll(async () => {
  await app.close()
})

const request = (key: string, headers: Record<string, string> = {}) => {
  const [method, url] = key.split(' ') as [string, string]
  return app.inject({
    method: method as 'GET',
    url: url.replace(/:[A-Za-z]+/g, '1').concat(url.endsWith('/search') ? '?q=x' : ''),
    headers,
    ...(method === 'POST' || method === 'PUT' ? { payload: {} } : {}),
  })
}

describe('the access table', () => {
  it('lists exactly the registered /api routes', () => {
    expect([...app.apiRoutes].sort()).toEqual(Object.keys(ROUTE_ACCESS).sort())
  })
})

describe('every /api route without a token', () => {
  const protectedRoutes = Object.entries(ROUTE_ACCESS)
    .filter(([, access]) => access.allow !== 'public')
    .map(([key]) => key)

  it.each(protectedRoutes)('%s returns 401 AUTH_001 in the envelope', async (key) => {
    const response = await request(key)
    expect(response.statusCode).toBe(401)
    expect(response.json()).toMatchObject({ success: false, error: { code: 'AUTH_001' } })
  })

  it.each(
    Object.entries(ROUTE_ACCESS)
      .filter(([, access]) => access.allow === 'public')
      .map(([key]) => key),
  )('%s is public: no 401 without a token', async (key) => {
    const response = await request(key)
    expect(response.statusCode).not.toBe(401)
    expect(response.statusCode).toBeLessThan(500)
  })
})

describe('every role-restricted /api route', () => {
  const restricted = Object.entries(ROUTE_ACCESS).filter(([, access]) => Array.isArray(access.allow))

  it.each(restricted.map(([key]) => key))(
    '%s returns 403 AUTH_003 to a user without the role',
    async (key) => {
      const user = await (await newOrganization(app)).user('USER')
      const response = await request(key, bearer(user.token))
      expect(response.statusCode).toBe(403)
      expect(response.json()).toMatchObject({ success: false, error: { code: 'AUTH_003' } })
    },
  )
})
