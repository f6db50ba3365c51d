import { Type } from '@sinclair/typebox'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Nullable } from '../../../schemas/common.js'
import type { App } from '../../../src/app.js'
import { buildTestApp } from '../../helpers/app.js'
import { bearer, newOrganization, patientBody, type TestUser } from '../../helpers/factories.js'

let app: App
let provider: TestUser
let biller: TestUser

// Shapes the API's own request schemas hardly use (a union of literals); the route is outside /api,
// so neither authentication nor the contract applies, but validation and the error handler do.
const Shapes = Type.Object(
  {
    colour: Type.Union([Type.Literal('red'), Type.Literal('green'), Type.Literal('blue')]),
    shade: Type.Optional(Nullable(Type.Union([Type.Literal('light'), Type.Literal('dark')]))),
    note: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 5, pattern: '\\S' }))),
    reading: Type.Optional(Type.Union([Type.Number(), Type.String({ pattern: '^[0-9]+$' })])),
  },
  { additionalProperties: false },
)

beforeAll(async () => {
  app = await buildTestApp({}, (instance) => {
    instance.post('/test/shapes', { schema: { body: Shapes } }, async () => ({ ok: true }))
  })
  const org = await newOrganization(app)
  provider = await org.user('PROVIDER')
  biller = await org.user('BILLING')
})
afterAll(async () => {
  await app.close()
})

const createPatient = (payload: object) =>
  app.inject({ method: 'POST', url: '/api/patients', headers: bearer(provider.token), payload })

const shapes = (payload: object) => app.inject({ method: 'POST', url: '/test/shapes', payload })

describe('POST /api/patients with several mistakes', () => {
  it('returns one 422 naming every problem, with the allowed values and the expected format', async () => {
    const body = patientBody()
    const response = await createPatient({
      ...body,
      identification: { ...body.identification, gender: 'Robot', dateOfBirth: '31/01/1990' },
      allergie: 'peanuts',
    })
    expect(response.statusCode).toBe(422)
    const { error, message } = response.json()
    expect(message).toBe('Validation failed')
    expect(error.code).toBe('VAL_001')
    expect(error.details.split('; ').sort()).toEqual([
      'allergie is not a known field',
      'identification.dateOfBirth must be a date YYYY-MM-DD',
      'identification.gender must be one of Male, Female, Other, Unknown',
    ])
    expect(error.fields).toHaveLength(3)
    expect(error.fields).toEqual(
      expect.arrayContaining([
        { path: 'allergie', message: 'is not a known field' },
        { path: 'identification.dateOfBirth', message: 'must be a date YYYY-MM-DD' },
        { path: 'identification.gender', message: 'must be one of Male, Female, Other, Unknown' },
      ]),
    )
  })

  it('never echoes the values sent', async () => {
    const body = patientBody()
    const response = await createPatient({
      ...body,
      identification: { ...body.identification, gender: 'SECRET-GENDER', lastName: 4711 },
      contact: { email: 'secret.value@', phoneNumber: 'SECRET-PHONE' },
    })
    expect(response.statusCode).toBe(422)
    expect(response.body).not.toMatch(/SECRET|secret\.value|4711/)
    expect(response.json().error.fields).toEqual([
      { path: 'identification.lastName', message: 'must be a string' },
      { path: 'identification.gender', message: 'must be one of Male, Female, Other, Unknown' },
      { path: 'contact.email', message: 'must be an e-mail address' },
      {
        path: 'contact.phoneNumber',
        message: expect.stringMatching(/^must match the pattern \^.+\$ \(Telephone number: /),
      },
    ])
  })

  it('answers VAL_002 as soon as a required field is missing, whatever else is wrong, and VAL_001 otherwise', async () => {
    const missing = await createPatient({ identification: { firstName: 'Ann', dateOfBirth: '1990-01-01' } })
    expect(missing.statusCode).toBe(422)
    expect(missing.json()).toMatchObject({
      message: 'Missing required field',
      error: {
        code: 'VAL_002',
        details: 'identification.lastName is required; identification.gender is required',
        fields: [
          { path: 'identification.lastName', message: 'is required' },
          { path: 'identification.gender', message: 'is required' },
        ],
      },
    })

    const mixed = await createPatient({
      identification: { firstName: 'Ann', dateOfBirth: '1990-01-01', gender: 'Robot' },
    })
    expect(mixed.statusCode).toBe(422)
    expect(mixed.json()).toMatchObject({
      message: 'Missing required field',
      error: {
        code: 'VAL_002',
        details:
          'identification.lastName is required; identification.gender must be one of Male, Female, Other, Unknown',
      },
    })

    const wrong = await createPatient(
      patientBody({ identification: { ...patientBody().identification, gender: 'Robot' } }),
    )
    expect(wrong.statusCode).toBe(422)
    expect(wrong.json()).toMatchObject({ message: 'Validation failed', error: { code: 'VAL_001' } })
  })

  it('answers VAL_002 for a missing field beside a string the schema is not even asked about (a NUL)', async () => {
    const { lastName: _dropped, ...identification } = patientBody().identification
    const response = await createPatient({
      ...patientBody(),
      identification: { ...identification, firstName: 'A\u0000n' },
    })
    expect(response.statusCode).toBe(422)
    expect(response.json().error).toEqual({
      code: 'VAL_002',
      details: expect.stringMatching(
        /^identification\.firstName must not contain a NUL .*; identification\.lastName is required$/,
      ),
      fields: [
        { path: 'identification.firstName', message: expect.stringMatching(/NUL/) },
        { path: 'identification.lastName', message: 'is required' },
      ],
    })
  })
})

describe('GET /api/patients/search with several problems', () => {
  const search = (query: string) =>
    app.inject({ url: `/api/patients/search${query}`, headers: bearer(provider.token) })

  it.each([
    ['alone', '', [{ path: 'q', message: 'is required' }]],
    [
      'with an unknown parameter',
      '?foo=1',
      [
        { path: 'q', message: 'is required' },
        { path: 'foo', message: 'is not a known field' },
      ],
    ],
    [
      'with a malformed page number',
      '?page=%2B1',
      [
        { path: 'page', message: 'must be an integer in canonical decimal form (digits only)' },
        { path: 'q', message: 'is required' },
      ],
    ],
  ])('returns 400 VAL_002 without q, %s', async (_case, query, fields) => {
    const response = await search(query)
    expect(response.statusCode).toBe(400)
    expect(response.json()).toMatchObject({
      success: false,
      message: 'Invalid request parameters',
      error: { code: 'VAL_002', fields },
    })
  })

  it('returns 400 VAL_001 when q is there and something else is wrong', async () => {
    const response = await search('?q=ann&foo=1')
    expect(response.statusCode).toBe(400)
    expect(response.json().error).toEqual({
      code: 'VAL_001',
      details: 'foo is not a known field',
      fields: [{ path: 'foo', message: 'is not a known field' }],
    })
  })
})

describe('GET /api/patients with bad parameters', () => {
  it('returns one 400 naming both parameters', async () => {
    const response = await app.inject({
      url: '/api/patients?size=500&status=GONE',
      headers: bearer(provider.token),
    })
    expect(response.statusCode).toBe(400)
    expect(response.json()).toMatchObject({
      success: false,
      message: 'Invalid request parameters',
      error: {
        code: 'VAL_001',
        details: 'size must be at most 100; status must be one of ACTIVE, INACTIVE, DECEASED',
        fields: [
          { path: 'size', message: 'must be at most 100' },
          { path: 'status', message: 'must be one of ACTIVE, INACTIVE, DECEASED' },
        ],
      },
    })
  })
})

/** An invoice of `count` line items, each with a quantity of 0 (at least 1 is allowed). */
const invoiceWithBadItems = (count: number) =>
  app.inject({
    method: 'POST',
    url: '/api/billing/invoices',
    headers: bearer(biller.token),
    payload: {
      patientId: 1,
      dueDate: '2026-12-31',
      lineItems: Array.from({ length: count }, () => ({
        code: '99213',
        description: 'Visit',
        quantity: 0,
        unitPrice: 100,
      })),
    },
  })

describe('POST /api/billing/invoices with a huge array of bad items', () => {
  it('reports the first 20 problems and how many more there are', async () => {
    const response = await invoiceWithBadItems(150)
    expect(response.statusCode).toBe(422)
    const { error } = response.json()
    expect(error.code).toBe('VAL_001')
    // One for the length of the array, one per item (150): 20 shown, 131 counted.
    expect(error.fields).toHaveLength(20)
    expect(error.fields[0]).toEqual({ path: 'lineItems', message: 'must have at most 100 items' })
    expect(error.fields[19]).toEqual({ path: 'lineItems.18.quantity', message: 'must be at least 1' })
    const sentences = error.details.split('; ')
    expect(sentences).toHaveLength(21)
    expect(sentences.at(-1)).toBe('… and 131 more')
  })

  it('reports only the first problem of a body too large to check through (a bounded cost)', async () => {
    // 1,500 items of five values each: past the 5,000 values checked for every problem.
    const response = await invoiceWithBadItems(1_500)
    expect(response.statusCode).toBe(422)
    const { error } = response.json()
    expect(error.fields).toEqual([{ path: 'lineItems', message: 'must have at most 100 items' }])
    expect(error.details).toBe('lineItems must have at most 100 items')
  })
})

describe('schema shapes', () => {
  it('names the values of a union of literals once, and the rule of a nullable value rather than null', async () => {
    const response = await shapes({ colour: 'pink', shade: 'mid', note: 'far too long' })
    expect(response.statusCode).toBe(422)
    expect(response.json().error.fields).toEqual([
      { path: 'colour', message: 'must be one of red, green, blue' },
      { path: 'shade', message: 'must be one of light, dark' },
      { path: 'note', message: 'must have at most 5 characters' },
    ])
  })

  it('says a value is empty once, not also blank', async () => {
    const response = await shapes({ colour: 'red', note: '' })
    expect(response.json().error.fields).toEqual([{ path: 'note', message: 'must not be empty' }])
    const blank = await shapes({ colour: 'red', note: '   ' })
    expect(blank.json().error.fields).toEqual([{ path: 'note', message: 'must not be blank' }])
  })

  it('reports the branch of a union the value could be meant for, or the types allowed', async () => {
    const text = await shapes({ colour: 'red', reading: '12a' })
    expect(text.json().error.fields).toEqual([
      { path: 'reading', message: 'must match the pattern ^[0-9]+$' },
    ])
    const neither = await shapes({ colour: 'red', reading: true })
    expect(neither.json().error.fields).toEqual([
      { path: 'reading', message: 'must be a number or a string' },
    ])
  })

  it('reports a body that is not an object as such', async () => {
    const response = await shapes([])
    expect(response.statusCode).toBe(422)
    expect(response.json().error).toEqual({
      code: 'VAL_001',
      details: 'body must be an object',
      fields: [{ path: '', message: 'must be an object' }],
    })
  })
})
