import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { buildTestApp } from '../../helpers/app.js'
import {
  bearer,
  createPatient,
  newOrganization,
  patientBody,
  type TestUser,
} from '../../helpers/factories.js'

let app: App
let nurse: TestUser
let patientId: number
const lines: Record<string, unknown>[] = []
const raw: string[] = []

beforeAll(async () => {
  app = await buildTestApp({ LOG_LEVEL: 'info' }, undefined, {
    logStream: {
      write(line: string) {
        raw.push(line)
        lines.push(JSON.parse(line))
      },
    },
  })
  nurse = await (await newOrganization(app)).user('NURSE')
  patientId = await createPatient(app, nurse)
})
afterAll(async () => {
  await app.close()
})

describe('a NUL character in any string input', () => {
  it.each([
    [
      'a top-level field',
      { identification: { ...patientBody().identification, firstName: 'Ja\u0000ne' } },
      /^identification\.firstName must not contain a NUL/,
    ],
    [
      'a nested field',
      {
        contact: {
          email: 'x@example.com',
          phoneNumber: '+1 555 010 4477',
          address: { street: 'Main\u0000St' },
        },
      },
      /NUL/,
    ],
  ])(
    'in %s of a body is 422 VAL_001 from validation, not a database error',
    async (_label, overrides, details) => {
      const response = await app.inject({
        method: 'POST',
        url: '/api/patients',
        headers: bearer(nurse.token),
        payload: patientBody(overrides),
      })
      expect(response.statusCode).toBe(422)
      expect(response.json()).toMatchObject({
        success: false,
        message: 'Validation failed',
        error: { code: 'VAL_001', details: expect.stringMatching(details) },
      })
    },
  )

  it('in a merge patch body is 422 as well', async () => {
    const response = await app.inject({
      method: 'PATCH',
      url: `/api/patients/${patientId}`,
      headers: { ...bearer(nurse.token), 'content-type': 'application/merge-patch+json' },
      payload: { identification: { lastName: 'Do\u0000e' } },
    })
    expect(response.statusCode).toBe(422)
    expect(response.json().error).toMatchObject({ code: 'VAL_001', details: expect.stringMatching(/NUL/) })
  })

  it('in a query parameter is 400 VAL_001, like any other malformed parameter', async () => {
    const response = await app.inject({
      url: '/api/patients/search?q=Ja%00ne',
      headers: bearer(nurse.token),
    })
    expect(response.statusCode).toBe(400)
    expect(response.json()).toMatchObject({
      message: 'Invalid request parameters',
      error: { code: 'VAL_001', details: expect.stringMatching(/^q must not contain a NUL/) },
    })
  })
  it('in a header the route declares is 400 VAL_001', async () => {
    const response = await app.inject({
      url: `/api/patients/${patientId}`,
      headers: { ...bearer(nurse.token), 'if-none-match': '"a\u0000b"' },
    })
    expect(response.statusCode).toBe(400)
    expect(response.json().error).toMatchObject({
      code: 'VAL_001',
      details: expect.stringMatching(/^if-none-match must not contain a NUL/),
    })
  })
})

describe('a lone UTF-16 surrogate in a JSON string', () => {
  const withFirstName = (escaped: string) =>
    JSON.stringify(patientBody()).replace(/"firstName":"[^"]*"/, `"firstName":"${escaped}"`)

  it.each([
    ['a high surrogate', 'A\\ud800b'],
    ['a low surrogate', '\\udc00'],
    ['a pair the wrong way round', '\\ude00\\ud83d'],
  ])('is 422 VAL_001 naming the field, not stored as U+FFFD: %s', async (_case, escaped) => {
    const response = await app.inject({
      method: 'POST',
      url: '/api/patients',
      headers: { ...bearer(nurse.token), 'content-type': 'application/json' },
      payload: withFirstName(escaped),
    })
    expect(response.statusCode).toBe(422)
    expect(response.json()).toMatchObject({
      success: false,
      message: 'Validation failed',
      error: {
        code: 'VAL_001',
        details: expect.stringMatching(/^identification\.firstName must be valid Unicode text/),
        fields: [{ path: 'identification.firstName', message: expect.stringMatching(/surrogate/) }],
      },
    })
  })

  it('in a member name is 422 as well', async () => {
    const response = await app.inject({
      method: 'PATCH',
      url: `/api/patients/${patientId}`,
      headers: { ...bearer(nurse.token), 'content-type': 'application/merge-patch+json' },
      payload: '{"identification":{"last\\ud800Name":"Doe"}}',
    })
    expect(response.statusCode).toBe(422)
    expect(response.json().error).toMatchObject({
      code: 'VAL_001',
      fields: [{ path: 'identification.lastName', message: expect.stringMatching(/surrogate/) }],
    })
  })

  it('is accepted as a pair (an emoji written as two escapes)', async () => {
    const response = await app.inject({
      method: 'POST',
      url: '/api/patients',
      headers: { ...bearer(nurse.token), 'content-type': 'application/json' },
      payload: withFirstName('Jo\\ud83d\\ude00'),
    })
    expect(response.statusCode).toBe(201)
    expect(response.json().data.identification.firstName).toBe('Jo\u{1F600}')
  })
})

describe('bytes that are not UTF-8 in a JSON body', () => {
  const patientBytes = (bytes: number[]) => {
    const [before, after] = JSON.stringify(patientBody()).split(/(?<="firstName":")[^"]*/)
    return Buffer.concat([Buffer.from(before as string), Buffer.from(bytes), Buffer.from(after as string)])
  }

  it.each([
    ['application/json', 'POST', '/api/patients'],
    ['application/fhir+json', 'POST', '/fhir/R4/Patient'],
  ])('is 400, not stored as U+FFFD (%s)', async (type, method, url) => {
    const response = await app.inject({
      method: method as 'POST',
      url,
      headers: { ...bearer(nurse.token), 'content-type': type },
      payload: patientBytes([0x4a, 0xff, 0xfe, 0x6f]),
    })
    expect(response.statusCode).toBe(400)
    const body = response.json()
    if (url.startsWith('/fhir')) expect(JSON.stringify(body.issue)).toContain('not valid UTF-8')
    else expect(body.error).toMatchObject({ code: 'VAL_001', details: 'The request body is not valid UTF-8' })
    expect(response.body).not.toContain('\ufffd')
  })

  it.each([
    ['an overlong encoding', [0xc0, 0xaf]],
    ['a truncated sequence', [0xe2, 0x82]],
    ['an encoded surrogate', [0xed, 0xa0, 0x80]],
  ])('is 400 for %s', async (_case, bytes) => {
    const response = await app.inject({
      method: 'PATCH',
      url: `/api/patients/${patientId}`,
      headers: { ...bearer(nurse.token), 'content-type': 'application/merge-patch+json' },
      payload: Buffer.concat([
        Buffer.from('{"identification":{"lastName":"D'),
        Buffer.from(bytes),
        Buffer.from('e"}}'),
      ]),
    })
    expect(response.statusCode).toBe(400)
    expect(response.json().error.details).toBe('The request body is not valid UTF-8')
  })

  it('takes multi-byte UTF-8 text as it is', async () => {
    const response = await app.inject({
      method: 'POST',
      url: '/api/patients',
      headers: { ...bearer(nurse.token), 'content-type': 'application/json' },
      payload: patientBytes([...Buffer.from('Zoë 😀')]),
    })
    expect(response.statusCode).toBe(201)
    expect(response.json().data.identification.firstName).toBe('Zoë 😀')
  })
})

describe('a member named like the prototype machinery', () => {
  it.each([
    ['__proto__ at the top', '{"__proto__":{"polluted":true},', '__proto__'],
    ['constructor at the top', '{"constructor":{"prototype":{"polluted":true}},', 'constructor'],
    ['an escaped __proto__', '{"\\u005f_proto__":{"polluted":true},', '__proto__'],
  ])('is 422 VAL_001 naming it as an unknown field: %s', async (_case, opening, name) => {
    const response = await app.inject({
      method: 'POST',
      url: '/api/patients',
      headers: { ...bearer(nurse.token), 'content-type': 'application/json' },
      payload: JSON.stringify(patientBody()).replace('{', opening),
    })
    expect(response.statusCode).toBe(422)
    expect(response.json()).toEqual({
      success: false,
      message: 'Validation failed',
      error: {
        code: 'VAL_001',
        details: `${name} is not a known field`,
        fields: [{ path: name, message: 'is not a known field' }],
      },
    })
    expect(({} as Record<string, unknown>).polluted).toBeUndefined()
  })

  it('is named with its path when nested, in a merge patch too', async () => {
    const response = await app.inject({
      method: 'PATCH',
      url: `/api/patients/${patientId}`,
      headers: { ...bearer(nurse.token), 'content-type': 'application/merge-patch+json' },
      payload: '{"contact":{"address":{"__proto__":{"city":"x"}}}}',
    })
    expect(response.statusCode).toBe(422)
    expect(response.json().error).toEqual({
      code: 'VAL_001',
      details: 'contact.address.__proto__ is not a known field',
      fields: [{ path: 'contact.address.__proto__', message: 'is not a known field' }],
    })
  })

  it('is only a name in a string value', async () => {
    const response = await app.inject({
      method: 'POST',
      url: '/api/patients',
      headers: bearer(nurse.token),
      payload: patientBody({ mrn: 'constructor' }),
    })
    expect(response.statusCode).toBe(201)
    expect(response.json().data.mrn).toBe('constructor')
  })
})

describe('ids and page numbers', () => {
  it.each(['+1', '01', '0x10', '1e3', '%201', '1%20', '1.0', '0b1', '%2B1'])(
    'refuse %s as an id with 400 VAL_001',
    async (id) => {
      const response = await app.inject({ url: `/api/patients/${id}`, headers: bearer(nurse.token) })
      expect(response.statusCode).toBe(400)
      expect(response.json()).toMatchObject({
        success: false,
        message: 'Invalid request parameters',
        error: { code: 'VAL_001', details: expect.stringMatching(/^id /) },
      })
    },
  )

  it.each(['+1', '01', '0x1', '1e0', '%201', '00'])('refuse page=%s with 400 VAL_001', async (page) => {
    const response = await app.inject({ url: `/api/patients?page=${page}`, headers: bearer(nurse.token) })
    expect(response.statusCode).toBe(400)
    expect(response.json().error).toMatchObject({ code: 'VAL_001', details: expect.stringMatching(/^page /) })
  })

  it('accept canonical decimal integers', async () => {
    expect(
      (await app.inject({ url: `/api/patients/${patientId}`, headers: bearer(nurse.token) })).statusCode,
    ).toBe(200)
    const page = await app.inject({ url: '/api/patients?page=0&size=10', headers: bearer(nurse.token) })
    expect(page.statusCode).toBe(200)
    expect(page.json().data.pageable).toEqual({ pageNumber: 0, pageSize: 10 })
  })
})

describe('the log line of a path that matches no route', () => {
  it('carries the method and a marker, never the path', async () => {
    const response = await app.inject({ url: '/api/patients-Jane-Doe-1984-07-12/records?dob=1984-07-12' })
    expect(response.statusCode).toBe(404)
    const line = lines.findLast((entry) => entry.msg === 'request completed') as {
      req: { method: string; url: string }
      res: { statusCode: number }
    }
    expect(line.req).toEqual({ method: 'GET', url: '(unmatched)' })
    expect(line.res.statusCode).toBe(404)
    // (Not the bare year: it can occur in a timestamp or a request id.)
    expect(raw.join('')).not.toMatch(/Jane-Doe|patients-|1984-07-12|dob=/)
  })

  it('still shows the route template of a matched route', async () => {
    await app.inject({ url: `/api/patients/${patientId}`, headers: bearer(nurse.token) })
    const line = lines.findLast((entry) => entry.msg === 'request completed') as { req: { url: string } }
    expect(line.req.url).toBe('/api/patients/:id')
  })
})
