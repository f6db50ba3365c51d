import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { accessRuleOf, describeAccess, ROUTE_ACCESS } from '../../../src/access/route-access.js'
import { ERRORS } from '../../../src/errors.js'
import { dereference } from '../../helpers/dereference.js'

// The committed document; tests/api/operations/operations.test.ts proves it is the one the routes produce.
interface Operation {
  operationId?: string
  description?: string
  summary?: string
  tags?: string[]
  security?: unknown[]
  requestBody?: { content: Record<string, { example?: unknown; examples?: unknown }> }
  responses: Record<string, { description?: string }>
}
interface OpenApiDocument {
  security: unknown[]
  paths: Record<string, Record<string, Operation>>
  webhooks: Record<string, Record<string, Operation>>
  components: Record<'schemas' | 'responses' | 'parameters' | 'headers', Record<string, unknown>>
}
const text = readFileSync('openapi.json', 'utf8')
const committed = JSON.parse(text) as OpenApiDocument
// Most checks read operations with every `$ref` followed.
const document = dereference(committed)

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
      expect(operation.security ?? document.security, label).toBeInstanceOf(Array)
    }
    const ids = all.map(({ operation }) => operation.operationId)
    expect(new Set(ids).size).toBe(ids.length)
  })

  it('names in each /api operation’s description exactly the roles of the access table', () => {
    const api = operations(document.paths).filter(({ label }) => label.includes(' /api/'))
    expect(api.length).toBe(Object.keys(ROUTE_ACCESS).length)
    for (const { label, operation } of api) {
      const [method, path] = label.split(' ') as [string, string]
      const access = accessRuleOf(`${method.toUpperCase()} ${path.replace(/\{(\w+)\}/g, ':$1')}`)
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
        if (!/^[45]/.test(status)) continue
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
        if (!/^[45]/.test(status)) continue
        const codes = response.description?.match(/\b[A-Z]+_\d{3}\b/g) ?? []
        expect(codes.length, `${label} ${status}`).toBeGreaterThan(0)
        for (const code of codes) {
          const entry = ERRORS[code as keyof typeof ERRORS]
          // A range (5XX) names each code with its own status.
          const statuses = status.endsWith('XX')
            ? [...(response.description?.matchAll(new RegExp(`${code}, (\\d{3})`, 'g')) ?? [])].map((m) =>
                Number(m[1]),
              )
            : [Number(status)]
          expect(statuses.length, `${label} ${status} ${code}`).toBeGreaterThan(0)
          for (const expected of statuses)
            expect(entry?.statuses, `${label} ${status} ${code}`).toContain(expected)
        }
      }
    }
  })
})

type Node = Record<string, unknown>
const isNode = (value: unknown): value is Node => typeof value === 'object' && value !== null

/** Every schema node under `node`, depth first, without following references. */
function* schemaNodes(node: unknown): Generator<Node> {
  if (Array.isArray(node)) for (const item of node) yield* schemaNodes(item)
  if (!isNode(node)) return
  yield node
  for (const [key, value] of Object.entries(node))
    if (!['example', 'examples', 'enum', 'const', 'default'].includes(key)) yield* schemaNodes(value)
}

/** The schemas operations use in place: request bodies and responses (not the shared components). */
function* inlineSchemas(section: Record<string, Record<string, Operation>>) {
  for (const { label, operation } of operations(section)) {
    const contents = [
      ...Object.values(operation.requestBody?.content ?? {}),
      ...Object.values(operation.responses).flatMap((response) =>
        Object.values((response as { content?: Record<string, unknown> }).content ?? {}),
      ),
    ]
    for (const content of contents) yield { label, schema: (content as { schema?: unknown }).schema }
  }
}

/** Objects of more than three properties written out in an operation instead of referred to. */
const inlineObjects = (source: OpenApiDocument) =>
  [...inlineSchemas(source.paths), ...inlineSchemas(source.webhooks)].flatMap(({ label, schema }) =>
    [...schemaNodes(schema)]
      .filter((node) => Object.keys((node.properties as Node | undefined) ?? {}).length > 3)
      .map((node) => `${label}: ${Object.keys(node.properties as Node).join(', ')}`),
  )

describe('openapi.json for code generators', () => {
  const { schemas, responses, parameters, headers } = committed.components

  it('names every entity, body, page and envelope once under components.schemas', () => {
    expect(Object.keys(schemas).length).toBeGreaterThanOrEqual(40)
    for (const name of [
      'Patient',
      'PatientCreate',
      'PatientUpdate',
      'PatientPatch',
      'PatientPage',
      'PatientEnvelope',
      'PatientPageEnvelope',
      'Appointment',
      'AppointmentCreate',
      'AppointmentPage',
      'Encounter',
      'VitalSigns',
      'ErrorEnvelope',
      'PageInfo',
      'Tombstone',
      'PatientCreatedEvent',
    ])
      expect(schemas, name).toHaveProperty(name)
    for (const name of Object.keys(schemas)) expect(name).toMatch(/^[A-Z][A-Za-z0-9]+$/)
  })

  it('uses no inline object of more than three properties in a request body or response', () => {
    expect(inlineObjects(committed)).toEqual([])
    // The rule finds one: a copy with the patient written out in place of its reference.
    const spoiled = structuredClone(committed)
    const media = (spoiled.paths['/api/patients']?.post?.requestBody?.content ?? {}) as Record<string, Node>
    ;(media['application/json'] as Node).schema = schemas.PatientCreate
    expect(inlineObjects(spoiled)).toContain(
      'post /api/patients: identification, contact, emergencyContact, preferredLanguage, race, ethnicity, birthSex, genderIdentity, mrn, status',
    )
  })

  it('shares the error responses, the paging parameters and the response headers', () => {
    for (const name of [
      'BadRequest',
      'Unauthorized',
      'Forbidden',
      'TooManyRequests',
      'ServerError',
      'NotModified',
    ])
      expect(responses, name).toHaveProperty(name)
    for (const name of [
      'PageQuery',
      'SizeQuery',
      'IdPath',
      'UpdatedSinceQuery',
      'CursorQuery',
      'XRequestIdHeader',
    ])
      expect(parameters, name).toHaveProperty(name)
    for (const name of [
      'X-Request-Id',
      'X-RateLimit-Limit',
      'X-RateLimit-Remaining',
      'X-RateLimit-Reset',
      'Retry-After',
      'ETag',
    ])
      expect(headers, name).toHaveProperty(name)
  })

  it('writes a fixed list of values as one enum, never as alternatives of one value each', () => {
    const singleValue = (option: unknown) =>
      isNode(option) && ('const' in option || (Array.isArray(option.enum) && option.enum.length === 1))
    const unions = [...schemaNodes(committed)].filter(
      (node) => Array.isArray(node.anyOf) && node.anyOf.length > 1 && node.anyOf.every(singleValue),
    )
    expect(unions).toEqual([])
    expect(document.components.schemas.Patient).toMatchObject({
      properties: { status: { type: 'string', enum: ['ACTIVE', 'INACTIVE', 'DECEASED'] } },
    })
  })

  it('describes every response in words of its own', () => {
    for (const { label, operation } of operations(document.paths))
      for (const [status, response] of Object.entries(operation.responses))
        expect(response.description, `${label} ${status}`).not.toMatch(/^(Default Response)?$/)
  })

  it('declares the headers each answer carries and each operation reads', () => {
    // Sign-ins are counted by their failures, and carry the rate-limit headers only when refused.
    const signIns = ['post /api/auth/login', 'post /api/auth/idp-login', 'post /api/auth/change-password']
    for (const { label, operation } of operations(document.paths)) {
      const reads = ((operation as { parameters?: { in: string; name: string }[] }).parameters ?? [])
        .filter((parameter) => parameter.in === 'header')
        .map((parameter) => parameter.name)
      expect(reads, label).toContain('x-request-id')
      for (const [status, response] of Object.entries(operation.responses)) {
        const sent = Object.keys((response as { headers?: Node }).headers ?? {})
        expect(sent, `${label} ${status}`).toContain('X-Request-Id')
        if (signIns.includes(label) && status !== '429')
          expect(sent, `${label} ${status}`).not.toContain('X-RateLimit-Limit')
        else if (label.includes(' /api/'))
          expect(sent, `${label} ${status}`).toEqual(
            expect.arrayContaining(['X-RateLimit-Limit', 'X-RateLimit-Reset']),
          )
        if (status === '429') expect(sent, `${label} ${status}`).toContain('Retry-After')
      }
    }
    const responsesOf = (path: string, method: string) => document.paths[path]?.[method]?.responses ?? {}
    const sentBy = (path: string, method: string, status: string) =>
      Object.keys((responsesOf(path, method)[status] as { headers?: Node }).headers ?? {})
    expect(sentBy('/api/patients/{id}', 'get', '200')).toContain('ETag')
    expect(sentBy('/api/patients/{id}', 'get', '304')).toContain('ETag')
    expect(sentBy('/api/documents/{documentId}/download', 'get', '206')).toEqual(
      expect.arrayContaining(['Content-Range', 'Accept-Ranges', 'ETag']),
    )
    expect(sentBy('/api/billing/payments', 'post', '201')).toContain('Idempotent-Replayed')
  })

  it('lets a body that may be left out be left out, and names what a download can send', () => {
    expect(document.paths['/api/appointments/{id}/cancel']?.post?.requestBody).toMatchObject({
      required: false,
    })
    expect(document.paths['/api/patients']?.post?.requestBody).toMatchObject({ required: true })
    const download = document.paths['/api/documents/{documentId}/download']?.get?.responses['200'] as {
      content: Node
    }
    expect(Object.keys(download.content)).toEqual(['*/*'])
  })
})
