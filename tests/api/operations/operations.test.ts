import { readFileSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { accessRuleOf } from '../../../src/access/route-access.js'
import type { App } from '../../../src/app.js'
import { buildTestApp } from '../../helpers/app.js'
import { bearer, newOrganization } from '../../helpers/factories.js'

let app: App

beforeAll(async () => {
  app = await buildTestApp()
})
afterAll(async () => {
  await app.close()
})

describe('GET /actuator/health', () => {
  it('returns 200 UP with the db, diskSpace and ping components, without a token', async () => {
    const response = await app.inject({ url: '/actuator/health' })
    expect(response.statusCode).toBe(200)
    expect(response.json()).toMatchObject({
      status: 'UP',
      components: { db: { status: 'UP' }, diskSpace: { status: 'UP' }, ping: { status: 'UP' } },
    })
  })

  it('serves readiness and liveness probes', async () => {
    expect((await app.inject({ url: '/actuator/health/readiness' })).json()).toEqual({ status: 'UP' })
    expect((await app.inject({ url: '/actuator/health/liveness' })).json()).toEqual({ status: 'UP' })
  })
})

describe('GET /actuator/prometheus', () => {
  it('exposes per-route latency histograms by route template and status class, pool gauges and process metrics', async () => {
    const user = await (await newOrganization(app)).user('PROVIDER')
    await app.inject({ url: '/api/patients/123456', headers: bearer(user.token) })
    const response = await app.inject({ url: '/actuator/prometheus' })
    expect(response.statusCode).toBe(200)
    expect(response.headers['content-type']).toContain('text/plain')
    const text = response.body
    expect(text).toMatch(
      /http_request_duration_seconds_bucket\{[^}]*route="\/api\/patients\/:id"[^}]*status_class="4xx"/,
    )
    expect(text).not.toContain('/api/patients/123456')
    expect(text).not.toContain('http_request_summary_seconds')
    expect(text).toMatch(/ehr_db_pool_connections\{state="in_use"\} \d+/)
    expect(text).toMatch(/ehr_audit_records_buffered \d+/)
    expect(text).toContain('process_cpu_user_seconds_total')
  })
})

describe('the OpenAPI document', () => {
  it('is served at /v3/api-docs as OpenAPI 3.1 with the bearer scheme', async () => {
    const response = await app.inject({ url: '/v3/api-docs' })
    expect(response.statusCode).toBe(200)
    const document = response.json()
    expect(document.openapi).toBe('3.1.0')
    expect(document.components.securitySchemes.bearerAuth).toEqual({
      type: 'http',
      scheme: 'bearer',
      bearerFormat: 'JWT',
    })
    expect(document.info.description).toContain('| AUTH_002 | 401 |')
  })

  it('matches the committed openapi.json (run npm run openapi after changing routes or schemas)', () => {
    expect(JSON.parse(readFileSync('openapi.json', 'utf8'))).toEqual(
      JSON.parse(JSON.stringify(app.swagger())),
    )
  })

  it('documents every /api operation with an id, a tag, its security, its roles and its error responses', async () => {
    const document = (await app.inject({ url: '/v3/api-docs' })).json()
    const operations = Object.entries(
      document.paths as Record<string, Record<string, Record<string, unknown>>>,
    )
      .filter(([path]) => path.startsWith('/api/'))
      .flatMap(([path, methods]) =>
        Object.entries(methods).map(([method, operation]) => ({ path, method, operation })),
      )
    expect(operations.length).toBe(app.apiRoutes.length)
    for (const { path, method, operation } of operations) {
      const label = `${method} ${path}`
      expect(operation.operationId, label).toBeTypeOf('string')
      expect(operation.tags, label).toHaveLength(1)
      const responses = operation.responses as Record<string, unknown>
      expect(Object.keys(responses), label).toEqual(expect.arrayContaining(['5XX']))
      const access = accessRuleOf(`${method.toUpperCase()} ${path.replace(/\{(\w+)\}/g, ':$1')}`)
      expect(access, label).toBeDefined()
      if (access?.allow === 'public') {
        expect(operation.security, label).toEqual([])
      } else {
        // The document's default security: the bearer token.
        expect(operation.security ?? document.security, label).toEqual([{ bearerAuth: [] }])
        expect(Object.keys(responses), label).toEqual(expect.arrayContaining(['401', '403']))
        expect(operation.description, label).toMatch(/Requires (one of the roles|a valid access token)/)
      }
    }
  })
})

describe('the API explorer', () => {
  it('redirects /swagger-ui.html to the Swagger UI page', async () => {
    const redirect = await app.inject({ url: '/swagger-ui.html' })
    expect(redirect.statusCode).toBe(302)
    expect(redirect.headers.location).toBe('/swagger-ui/')
    const page = await app.inject({ url: '/swagger-ui/' })
    expect(page.statusCode).toBe(200)
    expect(page.body).toContain('swagger')
  })

  it('serves its own files and nothing beside them, and a path it does not know is a 404 envelope', async () => {
    const script = await app.inject({ url: '/swagger-ui/static/swagger-ui-bundle.js' })
    expect(script.statusCode).toBe(200)
    expect(script.headers['content-type']).toMatch(/javascript/)
    for (const url of [
      '/swagger-ui/no-such-file.js',
      '/swagger-ui/../package.json',
      '/swagger-ui/%2e%2e/package.json',
      '/swagger-ui/static/%2e%2e/%2e%2e/package.json',
    ]) {
      const answer = await app.inject({ url })
      expect(answer.statusCode, url).toBe(404)
      expect(answer.body, url).not.toContain('"name"')
    }
    const unknown = await app.inject({ url: '/swagger-ui/no-such-file.js' })
    expect(unknown.json()).toMatchObject({ success: false, error: { code: 'RES_001' } })
  })
})
