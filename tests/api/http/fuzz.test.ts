import fc from 'fast-check'
import type { LightMyRequestResponse } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { buildTestApp } from '../../helpers/app.js'
import { drainViolations } from '../../helpers/contract.js'
import { bearer } from '../../helpers/factories.js'
import { multipart } from '../../helpers/multipart.js'
import { documentedOperations, type Operation } from '../../helpers/openapi-operations.js'
import {
  newRecords,
  parameterKinds,
  RECORDS_ENVIRONMENT,
  RECORDS_WEBHOOK_HOST,
  type Records,
  recordsResolver,
} from '../../helpers/records.js'
import {
  type GeneratorOptions,
  type JsonSchema,
  nearMissObject,
  nearMissValue,
  validValue,
} from '../../helpers/schema-arbitrary.js'

/**
 * Property-based requests for every documented operation, from its own declared schemas: valid
 * ones and near misses (wrong types, missing or unknown fields, boundary numbers, long strings,
 * unicode, bad dates, unknown query parameters), always with a token of a role the route admits.
 * Whatever comes in, the answer is never a 5xx, is a status the document declares, and matches
 * the schema declared for that status (the contract checker of every test app checks the bytes).
 *
 * Runs are seeded: FUZZ_SEED and FUZZ_RUNS (runs per operation) reproduce or lengthen a run;
 * `npm run fuzz -- --runs 500 --seed 42` sets both.
 */
const SEED = Number(process.env.FUZZ_SEED ?? 20_261_122)
const RUNS = Number(process.env.FUZZ_RUNS ?? 4)

let generators: GeneratorOptions = {
  uris: [
    `https://${RECORDS_WEBHOOK_HOST}/ehr`,
    'https://unknown.example.test/hook',
    'http://127.0.0.1:9/hook',
    'ftp://hooks.example.test/x',
  ],
}

interface FuzzRequest {
  path: Record<string, string>
  /** A parameter given twice arrives as an array. */
  query: Record<string, string | string[]>
  headers: Record<string, string>
  body: unknown
  /** A body sent as raw text instead of serialised (malformed JSON, or not JSON at all). */
  rawBody?: string
  /** A Content-Type other than the one the operation declares. */
  contentType?: string
}

const asText = (value: unknown) =>
  typeof value === 'string'
    ? value
    : value !== null && typeof value === 'object'
      ? JSON.stringify(value)
      : String(value)

let app: App
let records: Records

beforeAll(async () => {
  app = await buildTestApp(
    {
      ...RECORDS_ENVIRONMENT,
      // Thousands of requests from one client: the limiter is tested elsewhere, and a 429 here would
      // stop the requests from reaching the routes.
      RATE_LIMIT_AUTHENTICATED: '10000000',
      RATE_LIMIT_ANONYMOUS: '10000000',
    },
    undefined,
    { resolveHost: recordsResolver },
  )
  records = await newRecords(app)
  // Ids in bodies name the organization's own records most of the time, so creations get through.
  const { ids, makers } = records
  generators = {
    ...generators,
    known: {
      patientId: ids.patient,
      providerId: ids.provider,
      appointmentId: ids.appointment,
      encounterId: ids.encounter,
      invoiceId: ids.invoice,
      replyToId: ids.message,
      recipientId: makers.doctor.id,
      userId: makers.doctor.id,
    },
  }
})
afterAll(async () => {
  await app.close()
})

/**
 * A token of a user the route admits: one of the records' makers when one holds an admitted role
 * (so that, say, the sender reads the message), otherwise a user with the admitted roles. Issued
 * per operation, so that a long run never outlives a token.
 */
async function tokenFor(operation: Operation): Promise<string> {
  const { allow } = operation.access
  const { nurse, doctor, biller, admin } = records.makers
  const maker = [nurse, doctor, biller, admin].find(
    (user) =>
      allow === 'public' || allow === 'authenticated' || user.roles.some((role) => allow.includes(role)),
  )
  return (maker ?? (await records.userFor(allow))).token
}

/** Valid and near-miss requests for one operation. */
/** Valid values the fuzzer does not vary: a long-poll would hold each request up to its `wait`. */
const FIXED_QUERY_VALUES: Record<string, fc.Arbitrary<string>> = { wait: fc.constant('0') }

function requests(operation: Operation): fc.Arbitrary<FuzzRequest> {
  const parameters = operation.operation.parameters ?? []
  const pathParameters = parameters.filter((p) => p.in === 'path')
  const queryParameters = parameters.filter((p) => p.in === 'query')
  const headerParameters = parameters.filter((p) => p.in === 'header')
  const kinds = new Map(parameterKinds(operation.path))

  // Mostly the organization's own records, so that requests get past the lookup to the rules.
  const validPath = (name: string, schema: JsonSchema) =>
    fc.oneof(
      { weight: 6, arbitrary: fc.constant(String(records.ids[kinds.get(name) ?? 'patient'])) },
      { weight: 1, arbitrary: validValue(schema, generators).map(asText) },
    )
  const paths = (odd?: string) =>
    fc.record(
      Object.fromEntries(
        pathParameters.map((p) => [
          p.name,
          p.name === odd
            ? nearMissValue(p.schema, generators)
                .map(asText)
                // A URL cannot carry an empty segment or a lone surrogate (no UTF-8 for it).
                .filter((text) => text !== '' && !/\p{Cs}/u.test(text))
            : validPath(p.name, p.schema),
        ]),
      ),
    ) as fc.Arbitrary<Record<string, string>>

  const queries = (odd?: string) =>
    fc.record(
      Object.fromEntries(
        queryParameters.map((p) => [
          p.name,
          p.name === odd
            ? nearMissValue(p.schema, generators).map(asText)
            : (FIXED_QUERY_VALUES[p.name] ?? validValue(p.schema, generators).map(asText)),
        ]),
      ),
      { requiredKeys: queryParameters.filter((p) => p.required && p.name !== odd).map((p) => p.name) },
    ) as fc.Arbitrary<Record<string, string>>

  const headers = fc.record(
    Object.fromEntries(headerParameters.map((p) => [p.name, validValue(p.schema, generators).map(asText)])),
    { requiredKeys: [] },
  ) as fc.Arbitrary<Record<string, string>>

  const bodyContent = operation.operation.requestBody?.content ?? {}
  const bodySchema = Object.values(bodyContent)[0]?.schema
  const body = bodySchema ? validValue(bodySchema, generators) : fc.constant(undefined)
  const oddBody = bodySchema
    ? bodySchema.type === 'object' && bodySchema.properties
      ? fc.oneof(nearMissObject(bodySchema, generators), nearMissValue(bodySchema, generators))
      : nearMissValue(bodySchema, generators)
    : fc.jsonValue({ maxDepth: 2 })

  const request = (
    path: fc.Arbitrary<Record<string, string>>,
    query: fc.Arbitrary<Record<string, string>>,
    payload: fc.Arbitrary<unknown>,
  ) => fc.record({ path, query, headers, body: payload })

  const nearMisses: fc.Arbitrary<FuzzRequest>[] = [
    request(paths(), queries(), oddBody),
    request(paths(), queries(), body).chain((valid) =>
      fc
        .tuple(
          fc.constantFrom('unknownParam', 'pageSize', 'include', 'page[size]', 'SIZE'),
          fc.string({ maxLength: 8 }),
        )
        .map(([name, value]) => ({ ...valid, query: { ...valid.query, [name]: value } })),
    ),
    ...pathParameters.map((p) => request(paths(p.name), queries(), body)),
    ...queryParameters.map((p) => request(paths(), queries(p.name), body)),
    ...queryParameters.map((p) =>
      request(paths(), queries(), body).chain((valid) =>
        fc
          .tuple(validValue(p.schema, generators), validValue(p.schema, generators))
          .map(([first, second]) => ({
            ...valid,
            query: { ...valid.query, [p.name]: [asText(first), asText(second)] },
          })),
      ),
    ),
    ...headerParameters.map((p) =>
      request(paths(), queries(), body).chain((valid) =>
        fc
          .oneof(
            fc.constantFrom('', ' ', 'k'.repeat(300)),
            fc.string({ unit: 'grapheme-ascii', maxLength: 20 }),
          )
          .map((value) => ({ ...valid, headers: { ...valid.headers, [p.name]: value } })),
      ),
    ),
  ]
  if (bodySchema)
    nearMisses.push(
      request(paths(), queries(), body).chain((valid) =>
        fc
          .constantFrom('{', '{"a":', '[1,]', 'null', '"text"', '{"identification":{"__proto__":{"x":1}}}')
          .map((rawBody) => ({ ...valid, rawBody })),
      ),
      request(paths(), queries(), body).chain((valid) =>
        fc
          .constantFrom(
            'text/plain',
            'application/xml',
            'application/json; charset=latin1',
            'multipart/form-data; boundary=x',
            'application/x-www-form-urlencoded',
            'application/vnd.api+json',
          )
          .map((contentType) => ({ ...valid, contentType, rawBody: JSON.stringify(valid.body ?? null) })),
      ),
    )
  return fc.oneof(
    { weight: 1, arbitrary: request(paths(), queries(), body) },
    { weight: 2, arbitrary: fc.oneof(...nearMisses) },
  )
}

function send(operation: Operation, token: string, request: FuzzRequest): Promise<LightMyRequestResponse> {
  const url = operation.path.replace(/\{([^}]+)\}/g, (_, name: string) =>
    encodeURIComponent(request.path[name] ?? ''),
  )
  const headers: Record<string, string> = { ...bearer(token), ...request.headers }
  const contentType = Object.keys(operation.operation.requestBody?.content ?? {})[0]
  const common = { method: operation.method, url, query: request.query }
  if (!contentType) return app.inject({ ...common, headers })
  if (request.rawBody !== undefined)
    return app.inject({
      ...common,
      headers: { ...headers, 'content-type': request.contentType ?? contentType },
      payload: request.rawBody,
    })
  const fields =
    request.body !== null && typeof request.body === 'object' ? (request.body as Record<string, unknown>) : {}
  if (contentType === 'multipart/form-data') {
    const { file, ...rest } = fields
    const upload = multipart([
      ...Object.entries(rest).map(([name, value]): [string, string] => [name, asText(value)]),
      ...(file === undefined
        ? []
        : [
            {
              fileName: 'upload.pdf',
              contentType: 'application/pdf',
              content: Buffer.from(`%PDF-1.7\n${asText(file)}`),
            },
          ]),
    ])
    return app.inject({ ...common, headers: { ...headers, ...upload.headers }, payload: upload.payload })
  }
  if (contentType === 'application/x-www-form-urlencoded') {
    const form = new URLSearchParams(
      Object.entries(fields).map(([name, value]): [string, string] => [name, asText(value)]),
    )
    return app.inject({
      ...common,
      headers: { ...headers, 'content-type': contentType },
      payload: form.toString(),
    })
  }
  return app.inject({
    ...common,
    headers: { ...headers, 'content-type': 'application/json' },
    payload: JSON.stringify(request.body === undefined ? null : request.body),
  })
}

function expectWithinContract(operation: Operation, request: FuzzRequest, response: LightMyRequestResponse) {
  const seen = `${operation.name} ${JSON.stringify(request).slice(0, 400)} → ${response.statusCode} ${response.body.slice(0, 400)}`
  expect(response.statusCode, seen).toBeLessThan(500)
  expect(Object.keys(operation.operation.responses), seen).toContain(String(response.statusCode))
  // The contract checker compared the bytes with the schema declared for this status.
  expect(drainViolations(), seen).toEqual([])
  if (!operation.path.startsWith('/api/') || response.statusCode === 204) return
  if (!String(response.headers['content-type'] ?? '').startsWith('application/json')) return
  const body = response.json()
  expect(typeof body.success, seen).toBe('boolean')
  expect(typeof body.message, seen).toBe('string')
  if (!body.success) expect(typeof body.error?.code, seen).toBe('string')
}

// Operations that remove a record run last, so that the others meet the records still there.
const operations = documentedOperations().sort(
  (a, b) => Number(a.method === 'DELETE') - Number(b.method === 'DELETE'),
)

describe('every documented operation under generated requests', () => {
  it.each(operations.map((operation) => [operation.name, operation] as const))(
    '%s stays within its contract',
    async (_name, operation) => {
      const token = await tokenFor(operation)
      await fc.assert(
        fc.asyncProperty(requests(operation), async (request) => {
          expectWithinContract(operation, request, await send(operation, token, request))
        }),
        { seed: SEED, numRuns: RUNS },
      )
    },
    // Long runs (npm run fuzz) take their time; a request costs a few milliseconds.
    Math.max(30_000, RUNS * 200),
  )
})
