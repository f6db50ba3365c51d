import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import type { Middleware } from 'openapi-fetch'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { OPENAPI_DOCUMENT_FILE } from '../../scripts/openapi-types/write.js'
import { walkPracticeDay } from '../../scripts/smoke/walk.js'
import type { App } from '../../src/app.js'
import { buildTestApp } from '../helpers/app.js'
import { newOrganization, TEST_PASSWORD } from '../helpers/factories.js'
import { type PrismProxy, startPrism } from '../helpers/servers/prism.js'

// An independent implementation of OpenAPI holds the service to the document: Stoplight Prism, as a
// validating proxy (`prism proxy --errors`), sees every request and response of the smoke walk.

let app: App
let upstream: string
let prism: PrismProxy

beforeAll(async () => {
  app = await buildTestApp({
    // The walk's webhook receiver listens on loopback over plain HTTP.
    OUTBOX_WORKER: 'true',
    WEBHOOK_ALLOW_HTTP: 'true',
    WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
  })
  await app.listen({ host: '127.0.0.1', port: 0 })
  upstream = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
  prism = await startPrism({ document: OPENAPI_DOCUMENT_FILE, upstream })
})
afterAll(async () => {
  await prism?.stop()
  await app?.close()
})

interface Exchange {
  request: string
  status: number
  /** What Prism found wrong in the exchange (its sl-violations header). */
  violations: unknown[]
  /** Prism's own answer instead of the service's: a request or response it refused under --errors. */
  problem?: unknown
}

/** Records each answer the walk receives through Prism, with what Prism found wrong in it. */
function recorder(exchanges: Exchange[]): Middleware {
  return {
    async onResponse({ request, response }) {
      const header = response.headers.get('sl-violations')
      const exchange: Exchange = {
        request: `${request.method} ${new URL(request.url).pathname}`,
        status: response.status,
        violations: header === null ? [] : JSON.parse(header),
      }
      if (response.headers.get('content-type') === 'application/problem+json') {
        exchange.problem = await response.clone().json()
      }
      exchanges.push(exchange)
    },
  }
}

describe('the smoke walk through Prism, validating against openapi.json', () => {
  it('completes every step, with no request or response violating the document', async () => {
    const organization = await newOrganization(app)
    const admin = await organization.user('ADMIN', 'PROVIDER')
    const nurse = await organization.user('NURSE')
    const exchanges: Exchange[] = []
    const loggedBefore = prism.loggedViolations().length

    // With --errors a violating response becomes a 500 problem (a violating request, a 422 problem
    // that is never forwarded) and the walk stops there; what Prism found is checked first, as it
    // says which rule of the document was broken.
    const result = await walkPracticeDay({
      baseUrl: prism.url,
      admin: { username: admin.email, password: TEST_PASSWORD },
      recipient: { username: nurse.email, password: TEST_PASSWORD },
      webhookTimeoutMs: 15_000,
      middleware: recorder(exchanges),
    }).catch((error: Error) => error)

    expect(exchanges.filter((exchange) => exchange.violations.length > 0 || exchange.problem)).toEqual([])
    expect(prism.loggedViolations().slice(loggedBefore)).toEqual([])
    if (result instanceof Error) throw result
    expect(result.steps).toContain('upload and download document')
    // The walk's every call went through Prism (the webhook calls go straight to its receiver).
    expect(exchanges.length).toBeGreaterThanOrEqual(20)
  })
})

describe('Prism as the check (the proof that it bites)', () => {
  it('refuses a request the document does not allow, naming the violation', async () => {
    const organization = await newOrganization(app)
    const desk = await organization.user('FRONT_DESK')

    const response = await fetch(`${prism.url}/api/patients`, {
      method: 'POST',
      headers: { authorization: `Bearer ${desk.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        identification: { firstName: 'Jane', lastName: 'Doe', dateOfBirth: '1984-07-12', gender: 'Female' },
        bloodType: 'O+',
      }),
    })

    expect(response.status).toBe(422)
    expect(response.headers.get('content-type')).toBe('application/problem+json')
    expect(await response.json()).toMatchObject({
      validation: [expect.objectContaining({ message: expect.stringContaining("found 'bloodType'") })],
    })
    // Prism logs the refusal after answering.
    await expect
      .poll(() => prism.loggedViolations())
      .toContainEqual(
        expect.stringContaining(
          'Request terminated with error: https://stoplight.io/prism/errors#UNPROCESSABLE_ENTITY',
        ),
      )
  })

  it('turns an answer that breaks the document into a 500 problem naming the violation', async () => {
    // A document that says the service is never up, so that its answer (UP) breaks it.
    const neverUp = {
      openapi: '3.1.0',
      info: { title: 'The service, never up', version: '1' },
      paths: {
        '/actuator/health/liveness': {
          get: {
            responses: {
              '200': {
                description: 'Down',
                content: {
                  'application/json': {
                    schema: {
                      type: 'object',
                      required: ['status'],
                      properties: { status: { const: 'DOWN' } },
                    },
                  },
                },
              },
            },
          },
        },
      },
    }
    const dir = await mkdtemp(path.join(tmpdir(), 'ehr-prism-'))
    const file = path.join(dir, 'openapi.json')
    await writeFile(file, JSON.stringify(neverUp))
    const strict = await startPrism({ document: file, upstream })
    try {
      const response = await fetch(`${strict.url}/actuator/health/liveness`)

      expect(response.status).toBe(500)
      expect(response.headers.get('content-type')).toBe('application/problem+json')
      expect(await response.json()).toMatchObject({
        validation: [
          expect.objectContaining({ location: ['response', 'body', 'status'], severity: 'Error' }),
        ],
      })
      // Under --errors Prism logs the refusal, not each violation.
      await expect
        .poll(() => strict.loggedViolations())
        .toEqual([expect.stringContaining('https://stoplight.io/prism/errors#VIOLATIONS')])
    } finally {
      await strict.stop()
      await rm(dir, { recursive: true, force: true })
    }
  })
})
