import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { RouteAccess } from '../../../src/access/route-access.js'
import type { App } from '../../../src/app.js'
import { buildTestApp } from '../../helpers/app.js'
import {
  bearer,
  daysFromToday,
  everyDay,
  patientBody,
  type TestOrganization,
  type TestUser,
  uniqueNpi,
} from '../../helpers/factories.js'
import { multipart } from '../../helpers/multipart.js'
import { documentedOperations, type Operation } from '../../helpers/openapi-operations.js'
import {
  fillPath,
  newRecords,
  parameterKinds,
  RECORDS_ENVIRONMENT,
  RECORDS_WEBHOOK_HOST,
  type RecordKind,
  type Records,
  recordPath,
  recordsResolver,
} from '../../helpers/records.js'

/**
 * Every operation whose path names a record, derived from the OpenAPI document so that a new one
 * is covered without being listed: a user of another organization, with a role the route admits,
 * gets 403 AUTH_003 for the organization's record (and 404 RES_001 for a missing one), sees no
 * field of it, and a refused write leaves the record as it was. Likewise every id field of a JSON
 * body: a body that goes through with the caller's own id is refused with the other's.
 */
const operations = documentedOperations().filter(
  (operation) => operation.path.startsWith('/api/') && operation.path.includes('{'),
)

const EXCEPTION_DATE = daysFromToday(30)

/** A body the operation accepts, so that a refusal is about the organization and not the input. */
const VALID_BODIES: Record<string, () => unknown> = {
  'PUT /api/patients/{id}': () => patientBody(),
  'POST /api/patients/{patientId}/account': () => ({
    email: `patient.${uniqueness++}.${Date.now()}@example.test`,
  }),
  'PATCH /api/patients/{id}': () => ({ preferredLanguage: 'en' }),
  ...Object.fromEntries(
    (
      [
        ['vitals', { heartRate: 75 }],
        ['lab-results', { testCode: '2345-7', testName: 'Glucose', value: 96 }],
        ['conditions', { icd10Code: 'I10', description: 'Essential hypertension' }],
        ['allergies', { substance: 'Latex', category: 'ENVIRONMENT' }],
        ['medications', { name: 'Lisinopril 10 mg' }],
      ] as const
    ).flatMap(([path, body]) => [
      [`POST /api/patients/{patientId}/${path}`, () => body],
      [`PUT /api/patients/{patientId}/${path}/{id}`, () => body],
      [`PATCH /api/patients/{patientId}/${path}/{id}`, () => body],
      [`POST /api/patients/{patientId}/${path}/{id}/entered-in-error`, () => ({ reason: 'Wrong patient' })],
    ]),
  ),
  'POST /api/patients/{patientId}/documents': () =>
    multipart([
      ['title', 'Referral letter'],
      ['category', 'REFERRAL'],
      { fileName: 'letter.pdf', contentType: 'application/pdf', content: Buffer.from('%PDF-1.7\nletter\n') },
    ]),
  'PUT /api/webhooks/{id}': () => ({
    url: `https://${RECORDS_WEBHOOK_HOST}/other`,
    events: ['patient.created'],
  }),
  'PATCH /api/webhooks/{id}': () => ({ events: ['patient.created'] }),
  'POST /api/webhooks/{id}/rotate-secret': () => ({}),
  'PATCH /api/providers/{id}': () => ({ specialty: 'Cardiology' }),
  'PUT /api/organizations/{id}': () => ({ name: 'Renamed Practice', phoneNumber: '+1 555 010 9999' }),
  'PATCH /api/organizations/{id}': () => ({ phoneNumber: '+1 555 010 9999' }),
  'PUT /api/providers/{id}': () => ({
    firstName: 'Alan',
    lastName: 'Turing',
    npi: uniqueNpi(),
    timeZone: 'UTC',
  }),
  'PUT /api/providers/{id}/hours': () => ({ weeklyHours: everyDay(['08:00', '12:00']) }),
  'POST /api/providers/{id}/exceptions': () => ({ date: daysFromToday(45), kind: 'TIME_OFF' }),
  'PUT /api/appointments/{id}': () => ({ reason: 'Moved by someone else' }),
  'PATCH /api/appointments/{id}': () => ({ reason: 'Moved by someone else' }),
  'POST /api/appointments/{id}/cancel': () => ({ reason: 'Cancelled by someone else' }),
  'PUT /api/encounters/{id}': () => ({ encounterDate: daysFromToday(0), encounterType: 'FOLLOW_UP' }),
  'PATCH /api/encounters/{id}': () => ({ chiefComplaint: 'Written by someone else' }),
  'POST /api/encounters/{id}/addendum': () => ({ text: 'Written by someone else' }),
  'PUT /api/users/{id}': () => ({ firstName: 'Taken', lastName: 'Over', roles: ['ADMIN'] }),
  'PATCH /api/users/{id}': () => ({ roles: ['ADMIN'] }),
  'PUT /api/clients/{id}': () => ({ name: 'Taken over', roles: ['ADMIN'] }),
  'PATCH /api/clients/{id}': () => ({ roles: ['ADMIN'] }),
  'PATCH /api/smart-apps/{id}': () => ({ redirectUris: ['https://taken-over.example.com/cb'] }),
}

/** Query strings an operation cannot do without (its required parameters that have no default). */
const REQUIRED_QUERIES: Record<string, string> = {
  'GET /api/providers/{id}/schedule': `?startDate=${EXCEPTION_DATE}&endDate=${EXCEPTION_DATE}`,
}

/**
 * A mailbox holds only the user's own messages: anyone else's, in any organization, is documented
 * as 404 ("No such message among yours"), exactly as for one that does not exist.
 */
const NOT_YOURS_IS_404 = new Set([
  'GET /api/messages/{id}',
  'GET /api/messages/{id}/versions',
  'GET /api/messages/{id}/versions/{version}',
  'PUT /api/messages/{id}/read',
  // Likewise a user's own grants to apps: anyone else's is "No such app grant among yours".
  'DELETE /api/me/app-grants/{id}',
  // And an organization: a caller reaches its own only, and is not told which others exist.
  'GET /api/organizations/{id}',
  'PUT /api/organizations/{id}',
  'PATCH /api/organizations/{id}',
])

/** Where the owning organization reads each kind of record, and which of its users does. */
const READS: Record<RecordKind, { path: string; reader: keyof Records['makers'] }> = {
  patient: { path: '/api/patients/{id}', reader: 'nurse' },
  vitals: { path: '/api/patients/{patientId}/vitals/{id}', reader: 'nurse' },
  'lab-results': { path: '/api/patients/{patientId}/lab-results/{id}', reader: 'nurse' },
  conditions: { path: '/api/patients/{patientId}/conditions/{id}', reader: 'nurse' },
  allergies: { path: '/api/patients/{patientId}/allergies/{id}', reader: 'nurse' },
  medications: { path: '/api/patients/{patientId}/medications/{id}', reader: 'nurse' },
  message: { path: '/api/messages/{id}', reader: 'nurse' },
  room: { path: '/api/telehealth/rooms/{id}', reader: 'nurse' },
  invoice: { path: '/api/billing/invoices/{id}', reader: 'biller' },
  document: { path: '/api/documents/{documentId}/download', reader: 'nurse' },
  webhook: { path: '/api/webhooks/{id}', reader: 'admin' },
  delivery: { path: '/api/webhooks/{id}/deliveries/{deliveryId}', reader: 'admin' },
  provider: { path: '/api/providers/{id}', reader: 'nurse' },
  exception: {
    path: `/api/providers/{id}/schedule?startDate=${EXCEPTION_DATE}&endDate=${EXCEPTION_DATE}`,
    reader: 'nurse',
  },
  appointment: { path: '/api/appointments/{id}', reader: 'nurse' },
  encounter: { path: '/api/encounters/{id}', reader: 'nurse' },
  user: { path: '/api/users/{id}', reader: 'admin' },
  client: { path: '/api/clients/{id}', reader: 'admin' },
  'smart-app': { path: '/api/smart-apps/{id}', reader: 'admin' },
  'app-grant': { path: '/api/app-grants/{id}', reader: 'admin' },
  organization: { path: '/api/organizations/{id}', reader: 'admin' },
}

/** Who reads what a route about a record shows when not the record's reader (a patient's account). */
const SAME_PATH_READERS: Record<string, keyof Records['makers']> = {
  '/api/patients/{patientId}/account': 'admin',
}

/** Which of an organization's records (or users) an id field of a request body names. */
const BODY_IDS: Record<string, (records: Records, operation: string) => number> = {
  patientId: (r) => r.ids.patient,
  providerId: (r) => r.ids.provider,
  appointmentId: (r) => r.ids.appointment,
  encounterId: (r) => r.ids.encounter,
  invoiceId: (r) => r.ids.invoice,
  appId: (r) => r.ids['smart-app'],
  replyToId: (r) => r.ids.message,
  prescriberId: (r) => r.ids.provider,
  recipientId: (r) => r.makers.doctor.id,
  // The doctor's account is linked to the provider already: a new provider links the admin's.
  userId: (r, operation) => (operation === 'POST /api/providers' ? r.makers.admin : r.makers.doctor).id,
}

let uniqueness = 0

/**
 * Bodies that the outsiders' organization may send about its own records: with one id field
 * swapped for the owner's, the only difference is whose record the id names.
 */
const OWN_BODIES: Record<string, (own: Records, field: string) => Record<string, unknown>> = {
  ...Object.fromEntries(
    ['vitals', 'lab-results', 'conditions', 'allergies', 'medications'].flatMap((path) =>
      [`POST /api/patients/{patientId}/${path}`, `PUT /api/patients/{patientId}/${path}/{id}`].map((name) => [
        name,
        () => {
          const body = VALID_BODIES[name]?.() as Record<string, unknown>
          // One ACTIVE allergy per substance: each body names its own.
          return path === 'allergies' ? { ...body, substance: `Latex ${uniqueness++}` } : body
        },
      ]),
    ),
  ),
  'POST /api/messages': (own) => ({
    recipientId: own.makers.doctor.id,
    subject: 'Lab results',
    body: 'Ready',
  }),
  'POST /api/telehealth/rooms': (own, field) =>
    field === 'appointmentId' ? {} : { providerId: own.ids.provider, patientId: own.ids.patient },
  'POST /api/billing/invoices': (own) => ({
    patientId: own.ids.patient,
    dueDate: daysFromToday(30),
    lineItems: [{ code: '99213', description: 'Office visit', quantity: 1, unitPrice: 100 }],
  }),
  'POST /api/billing/payments': (own) => ({ invoiceId: own.ids.invoice, amount: 1, method: 'CASH' }),
  'POST /api/smart-launches': (own) => ({ patientId: own.ids.patient }),
  'POST /api/providers': () => ({ firstName: 'Alan', lastName: 'Turing', npi: uniqueNpi(), timeZone: 'UTC' }),
  'PUT /api/providers/{id}': () => ({
    firstName: 'Alan',
    lastName: 'Turing',
    npi: uniqueNpi(),
    timeZone: 'UTC',
  }),
  'POST /api/appointments': (own) => ({
    patientId: own.ids.patient,
    providerId: own.ids.provider,
    appointmentDate: daysFromToday(60 + uniqueness++),
    appointmentTime: '11:00:00',
  }),
  'PUT /api/appointments/{id}': () => ({ reason: 'Moved' }),
  'POST /api/encounters': (own) => ({
    patientId: own.ids.patient,
    providerId: own.ids.provider,
    encounterDate: daysFromToday(0),
    encounterType: 'OFFICE_VISIT',
  }),
}

/** Every (operation, id field of its JSON body) pair in the document. */
const bodyIdCases = documentedOperations().flatMap((operation) => {
  const schema = operation.operation.requestBody?.content['application/json']?.schema
  return Object.keys(schema?.properties ?? {})
    .filter((field) => /Id$/.test(field))
    .map((field) => [`${operation.name} ${field}`, operation, field] as const)
})

let app: App
let owner: Records
let outsiders: TestOrganization
let outsiderRecords: Records
const outsiderUsers = new Map<string, TestUser>()

beforeAll(async () => {
  app = await buildTestApp(RECORDS_ENVIRONMENT, undefined, {
    resolveHost: recordsResolver,
  })
  owner = await newRecords(app)
  outsiderRecords = await newRecords(app)
  outsiders = outsiderRecords.org
})
afterAll(async () => {
  await app.close()
})

/** The maker of the outsiders' records who holds a role the route admits. */
function pickMaker(allow: RouteAccess['allow']): keyof Records['makers'] {
  const makers = ['nurse', 'doctor', 'biller', 'admin'] as const
  if (allow === 'public' || allow === 'authenticated') return 'admin'
  return (
    makers.find((name) => outsiderRecords.makers[name].roles.some((role) => allow.includes(role))) ?? 'admin'
  )
}

async function outsider(allow: RouteAccess['allow']): Promise<TestUser> {
  const roles = allow === 'public' || allow === 'authenticated' ? (['ADMIN'] as const) : allow
  const key = roles.join(',')
  let user = outsiderUsers.get(key)
  if (!user) {
    user = await outsiders.user(...roles)
    outsiderUsers.set(key, user)
  }
  return user
}

function send(operation: Operation, user: TestUser, path: string) {
  let url = path
  const make = VALID_BODIES[operation.name]
  const headers = bearer(user.token)
  const required = (operation.operation.parameters ?? []).filter(
    (p) => p.in === 'query' && p.required && p.schema.default === undefined,
  )
  if (required.length > 0) {
    const query = REQUIRED_QUERIES[operation.name]
    if (!query) throw new Error(`No query for ${operation.name}: add one to REQUIRED_QUERIES`)
    url += query
  }
  if (!operation.operation.requestBody) return app.inject({ method: operation.method, url, headers })
  if (!make) throw new Error(`No valid body for ${operation.name}: add one to VALID_BODIES`)
  const body = make()
  if (operation.name === 'POST /api/patients/{patientId}/documents') {
    const upload = body as ReturnType<typeof multipart>
    return app.inject({
      method: operation.method,
      url,
      headers: { ...headers, ...upload.headers },
      payload: upload.payload,
    })
  }
  return app.inject({ method: operation.method, url, headers, payload: body as object })
}

/** What the owner sees of every record the operation names (and of the collection it posts to). */
async function ownerView(operation: Operation): Promise<string[]> {
  const reads = parameterKinds(operation.path).map(([, kind]) => READS[kind])
  if (operation.method !== 'GET' && operations.some((o) => o.method === 'GET' && o.path === operation.path)) {
    const kind = parameterKinds(operation.path).at(-1)?.[1] ?? 'patient'
    reads.push({ path: operation.path, reader: SAME_PATH_READERS[operation.path] ?? READS[kind].reader })
  }
  const views: string[] = []
  for (const read of reads) {
    const response = await app.inject({
      url: recordPath(read.path, owner),
      headers: bearer(owner.makers[read.reader].token),
    })
    expect(response.statusCode, `${read.path}: ${response.body}`).toBe(200)
    views.push(response.body)
  }
  return views
}

describe("another organization's records on every route that names one", () => {
  it('covers every operation with a record in its path', () => {
    expect(operations.length).toBeGreaterThan(50)
    for (const operation of operations) expect(() => parameterKinds(operation.path)).not.toThrow()
  })

  it.each(operations.map((operation) => [operation.name, operation] as const))(
    '%s is refused (403 AUTH_003), shows nothing and changes nothing',
    async (_name, operation) => {
      const [status, code] = NOT_YOURS_IS_404.has(operation.name) ? [404, 'RES_001'] : [403, 'AUTH_003']
      const before = await ownerView(operation)
      const response = await send(
        operation,
        await outsider(operation.access.allow),
        recordPath(operation.path, owner),
      )
      expect(response.statusCode, response.body).toBe(status)
      const body = response.json()
      expect(body).toMatchObject({ success: false, error: { code } })
      expect(body.data ?? null).toBeNull()
      expect(response.body).not.toContain(owner.marker)
      expect(await ownerView(operation)).toEqual(before)
    },
  )

  it.each(operations.map((operation) => [operation.name, operation] as const))(
    '%s answers 404 RES_001 for a record that does not exist',
    async (_name, operation) => {
      const missing = Object.fromEntries(
        parameterKinds(operation.path).map(([name]) => [name, 2_000_000_000]),
      )
      const response = await send(
        operation,
        await outsider(operation.access.allow),
        fillPath(operation.path, missing),
      )
      expect(response.statusCode, response.body).toBe(404)
      expect(response.json()).toMatchObject({ success: false, error: { code: 'RES_001' } })
    },
  )
})

describe("another organization's record named in a request body", () => {
  it('covers every id field of every JSON body', () => {
    expect(bodyIdCases.length).toBeGreaterThan(15)
    for (const [name, operation, field] of bodyIdCases) {
      expect(BODY_IDS[field], name).toBeDefined()
      expect(OWN_BODIES[operation.name], name).toBeDefined()
    }
  })

  it.each(bodyIdCases)('%s: refused, nothing shown', async (_name, operation, field) => {
    const user =
      outsiderRecords.makers[
        operation.access.allow === 'public' ? 'admin' : pickMaker(operation.access.allow)
      ]
    const url = recordPath(operation.path, outsiderRecords)
    const own = OWN_BODIES[operation.name]?.(outsiderRecords, field) ?? {}
    const idOf = (records: Records) => BODY_IDS[field]?.(records, operation.name) ?? 0
    // With the organization's own id the same body goes through, so a refusal is about the id.
    const accepted = await app.inject({
      method: operation.method,
      url,
      headers: bearer(user.token),
      payload: { ...own, [field]: idOf(outsiderRecords) },
    })
    expect(accepted.statusCode, accepted.body).toBeLessThan(300)
    const response = await app.inject({
      method: operation.method,
      url,
      headers: bearer(user.token),
      payload: { ...own, [field]: idOf(owner) },
    })
    expect([403, 404, 422], response.body).toContain(response.statusCode)
    const body = response.json()
    expect(body.success).toBe(false)
    expect(body.data ?? null).toBeNull()
    expect(response.body).not.toContain(owner.marker)
  })
})
