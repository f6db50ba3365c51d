import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { describeAccess, ROUTE_ACCESS } from '../../src/access/route-access.js'
import { ERRORS } from '../../src/errors.js'

// The committed document; tests/api/operations.test.ts proves it is the one the routes produce.
interface Operation {
  operationId?: string
  description?: string
  summary?: string
  tags?: string[]
  security?: unknown[]
  requestBody?: { content: Record<string, { example?: unknown; examples?: unknown }> }
  responses: Record<string, { description?: string }>
}
const document = JSON.parse(readFileSync('openapi.json', 'utf8')) as {
  paths: Record<string, Record<string, Operation>>
  webhooks: Record<string, Record<string, Operation>>
}

const operations = (section: Record<string, Record<string, Operation>>) =>
  Object.entries(section).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, operation]) => ({ label: `${method} ${path}`, operation })),
  )

describe('openapi.json', () => {
  it('gives every operation and event a unique operationId, a summary, one tag and its security', () => {
    const all = [...operations(document.paths), ...operations(document.webhooks)]
    expect(all.length).toBeGreaterThan(90)
    for (const { label, operation } of all) {
      expect(operation.operationId, label).toMatch(/^[a-z][A-Za-z0-9]+$/)
      expect(operation.summary, label).toMatch(/\S/)
      expect(operation.tags, label).toHaveLength(1)
      expect(operation.security, label).toBeInstanceOf(Array)
    }
    const ids = all.map(({ operation }) => operation.operationId)
    expect(new Set(ids).size).toBe(ids.length)
  })

  it('names in each /api operation’s description exactly the roles of the access table', () => {
    const api = operations(document.paths).filter(({ label }) => label.includes(' /api/'))
    expect(api.length).toBe(Object.keys(ROUTE_ACCESS).length)
    for (const { label, operation } of api) {
      const [method, path] = label.split(' ') as [string, string]
      const access = ROUTE_ACCESS[`${method.toUpperCase()} ${path.replace(/\{(\w+)\}/g, ':$1')}`]
      expect(access, label).toBeDefined()
      expect(operation.description?.endsWith(describeAccess(access ?? { allow: 'public' })), label).toBe(true)
    }
  })

  it('gives every request body an example, in every media type it accepts', () => {
    const bodies = operations(document.paths).filter(({ operation }) => operation.requestBody)
    expect(bodies.length).toBeGreaterThan(40)
    for (const { label, operation } of bodies) {
      for (const [mediaType, content] of Object.entries(operation.requestBody?.content ?? {})) {
        expect(content.example ?? content.examples, `${label} ${mediaType}`).toBeDefined()
      }
    }
  })

  it('documents the error envelope for every 4xx and 5xx answer of an /api operation', () => {
    for (const { label, operation } of operations(document.paths)) {
      if (!label.includes(' /api/')) continue
      for (const [status, response] of Object.entries(operation.responses)) {
        if (Number(status) < 400) continue
        const schema = (response as { content?: Record<string, { schema?: { required?: string[] } }> })
          .content?.['application/json']?.schema
        expect(schema?.required, `${label} ${status}`).toEqual(
          expect.arrayContaining(['success', 'message', 'error']),
        )
      }
    }
  })

  it('describes every error response with codes of the error table that carry its status', () => {
    for (const { label, operation } of operations(document.paths).filter(({ label }) =>
      label.includes(' /api/'),
    )) {
      for (const [status, response] of Object.entries(operation.responses)) {
        if (Number(status) < 400) continue
        const codes = response.description?.match(/\b[A-Z]+_\d{3}\b/g) ?? []
        expect(codes.length, `${label} ${status}`).toBeGreaterThan(0)
        for (const code of codes) {
          const entry = ERRORS[code as keyof typeof ERRORS]
          expect(entry?.statuses, `${label} ${status} ${code}`).toContain(Number(status))
        }
      }
    }
  })
})
