import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../src/app.js'
import { buildTestApp } from '../helpers/app.js'
import { bearer, newOrganization, patientBody } from '../helpers/factories.js'

// Names no code or library would print by chance: if one shows up in the log, a request leaked it.
const FIRST = 'Quillfeatheria'
const LAST = 'Zwyxbrandtova'
const EMAIL = 'quillfeatheria.zwyx@example.test'
const BIRTH_DATE = '1931-02-17'

let app: App
const raw: string[] = []

beforeAll(async () => {
  // The real pino logger at its most talkative level, writing into memory instead of stdout.
  app = await buildTestApp({ LOG_LEVEL: 'trace' }, undefined, {
    logStream: { write: (line: string) => void raw.push(line) },
  })
})
afterAll(async () => {
  await app.close()
})

describe('the log', () => {
  it('never contains a patient’s name, e-mail or birth date, nor the bearer token, whatever the request', async () => {
    const user = await (await newOrganization(app)).user('PROVIDER', 'ADMIN')
    const headers = bearer(user.token)
    const body = patientBody({
      identification: { firstName: FIRST, lastName: LAST, dateOfBirth: BIRTH_DATE, gender: 'Female' },
      contact: { email: EMAIL },
    })
    const created = await app.inject({ method: 'POST', url: '/api/patients', headers, payload: body })
    expect(created.statusCode).toBe(201)
    const id = created.json().data.id

    const read = await app.inject({ url: `/api/patients/${id}`, headers })
    expect(read.statusCode).toBe(200)
    expect(read.json().data.identification.lastName).toBe(LAST)
    const listed = await app.inject({ url: `/api/patients?lastName=${LAST}&firstName=${FIRST}`, headers })
    expect(listed.json().data.totalElements).toBe(1)
    const found = await app.inject({ url: `/api/patients/search?q=${FIRST}%20${LAST}`, headers })
    expect(found.json().data.content[0].id).toBe(id)
    const updated = await app.inject({
      method: 'PUT',
      url: `/api/patients/${id}`,
      headers,
      payload: { identification: { ...body.identification, middleName: `${FIRST}a` } },
    })
    expect(updated.statusCode).toBe(200)

    // Failures: a value where an id belongs, a body breaking the schema, malformed JSON, an unknown
    // route, a duplicate, and a bad token.
    expect((await app.inject({ url: `/api/patients/${LAST}`, headers })).statusCode).toBe(400)
    const invalid = await app.inject({
      method: 'POST',
      url: '/api/patients',
      headers,
      payload: { ...body, identification: { ...body.identification, dateOfBirth: `${LAST}` } },
    })
    expect(invalid.statusCode).toBe(422)
    const malformed = await app.inject({
      method: 'POST',
      url: '/api/patients',
      headers: { ...headers, 'content-type': 'application/json' },
      payload: `{"identification": {"firstName": "${FIRST}"`,
    })
    expect(malformed.statusCode).toBe(400)
    expect((await app.inject({ url: `/api/no-such/${LAST}/${FIRST}`, headers })).statusCode).toBe(404)
    const badToken = await app.inject({ url: '/api/patients', headers: bearer(`${user.token}x`) })
    expect(badToken.statusCode).toBe(401)

    await app.auditLog.flush()
    const log = raw.join('')
    // The log is really being captured: one access line per request above.
    expect(raw.filter((line) => line.includes('"request completed"')).length).toBeGreaterThanOrEqual(10)
    expect(log).toContain('"url":"/api/patients/:id"')
    for (const secret of [FIRST, LAST, EMAIL, BIRTH_DATE, user.token, user.token.split('.')[2] as string]) {
      expect(log.includes(secret), `the log contains ${secret.slice(0, 24)}`).toBe(false)
    }
  })

  it('censors credentials in anything logged with headers or a password', () => {
    app.log.info(
      { headers: { authorization: 'Bearer abc.def.ghi' }, login: { password: 'hunter2-hunter2' } },
      'diagnostic',
    )
    const line = raw.find((entry) => entry.includes('"diagnostic"'))
    expect(line).toBeDefined()
    expect(line).not.toContain('abc.def.ghi')
    expect(line).not.toContain('hunter2')
    expect(line).toContain('[redacted]')
  })
})
