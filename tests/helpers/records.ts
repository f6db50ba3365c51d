import { randomUUID } from 'node:crypto'
import { expect } from 'vitest'
import type { Role } from '../../src/access/roles.js'
import type { RouteAccess } from '../../src/access/route-access.js'
import type { App } from '../../src/app.js'
import { recordGrant } from '../../src/modules/smart-apps/service.js'
import { stubDns } from './dns.js'
import {
  bearer,
  daysFromToday,
  newOrganization,
  patientBody,
  providerBody,
  type TestOrganization,
  type TestUser,
} from './factories.js'
import { multipart } from './multipart.js'

/** Test configuration under which every kind of record can be made (telehealth needs Jitsi). */
export const RECORDS_ENVIRONMENT = {
  JITSI_DOMAIN: 'meet.example.org',
  JITSI_APP_ID: 'ehr-app',
  JITSI_APP_SECRET: 'test-jitsi-app-secret-of-34-chars!',
}

/** The webhook host of the records: known only to `recordsResolver`, never contacted. */
export const RECORDS_WEBHOOK_HOST = 'hooks.example.test'

/**
 * DNS for apps holding these records. The webhook host resolves to a public address (registration
 * refuses internal ones), as in the webhook tests; nothing is sent there, since tests run no
 * delivery worker and these records live in a database of their own. Every other name is unknown:
 * no lookup leaves the process.
 */
export const recordsResolver = stubDns({ [RECORDS_WEBHOOK_HOST]: ['93.184.216.34'] })

const RECORD_KINDS = [
  'patient',
  'vitals',
  'lab-results',
  'conditions',
  'allergies',
  'medications',
  'message',
  'room',
  'invoice',
  'document',
  'webhook',
  'delivery',
  'provider',
  'exception',
  'appointment',
  'encounter',
  'user',
  'client',
  'smart-app',
  'app-grant',
  'organization',
] as const
export type RecordKind = (typeof RECORD_KINDS)[number]

/** Which kind of record a `{id}` names, by the path segment before it. */
const KIND_OF_SEGMENT: Record<string, RecordKind> = {
  patients: 'patient',
  vitals: 'vitals',
  'lab-results': 'lab-results',
  conditions: 'conditions',
  allergies: 'allergies',
  medications: 'medications',
  messages: 'message',
  rooms: 'room',
  invoices: 'invoice',
  webhooks: 'webhook',
  providers: 'provider',
  appointments: 'appointment',
  encounters: 'encounter',
  users: 'user',
  clients: 'client',
  'smart-apps': 'smart-app',
  'app-grants': 'app-grant',
  organizations: 'organization',
}
const KIND_OF_PARAMETER: Record<string, RecordKind> = {
  patientId: 'patient',
  documentId: 'document',
  deliveryId: 'delivery',
  exceptionId: 'exception',
}

/** Path parameters that name no record, with the value the suites give them: a record's first version. */
const OTHER_PARAMETERS: Record<string, string> = { version: '1' }

/**
 * The kind of record each path parameter of an OpenAPI path names, in order. Throws for a
 * parameter it cannot place, so that a new route with an id fails the suites that use this.
 */
export function parameterKinds(path: string): Array<[string, RecordKind]> {
  const segments = path.split('/')
  const kinds: Array<[string, RecordKind]> = []
  segments.forEach((segment, index) => {
    const name = /^\{(.+)\}$/.exec(segment)?.[1]
    if (!name || Object.hasOwn(OTHER_PARAMETERS, name)) return
    const kind =
      KIND_OF_PARAMETER[name] ?? (name === 'id' ? KIND_OF_SEGMENT[segments[index - 1] ?? ''] : undefined)
    if (!kind) throw new Error(`No kind of record known for {${name}} in ${path}`)
    kinds.push([name, kind])
  })
  return kinds
}

/** An OpenAPI path with its parameters filled from `values` (by parameter name), or as OTHER_PARAMETERS says. */
export const fillPath = (path: string, values: Record<string, string | number>) =>
  path.replace(/\{([^}]+)\}/g, (_, name: string) =>
    encodeURIComponent(String(values[name] ?? OTHER_PARAMETERS[name])),
  )

/** An OpenAPI path with each id replaced by the id of that kind of record in `records`. */
export const recordPath = (path: string, records: Records) =>
  fillPath(path, Object.fromEntries(parameterKinds(path).map(([name, kind]) => [name, records.ids[kind]])))

export interface Records {
  org: TestOrganization
  ids: Record<RecordKind, number>
  /** A string written into the records' free text: a response that contains it shows the records. */
  marker: string
  /** The users who made the records: the nurse registered the patient, booked and sent the message. */
  makers: { admin: TestUser; nurse: TestUser; doctor: TestUser; biller: TestUser }
  /** A user of the organization holding exactly the roles of `allow` (or ADMIN for public routes). */
  userFor(allow: RouteAccess['allow']): Promise<TestUser>
}

/**
 * An organization holding one record of every kind, made through the API as its users would.
 * The app needs RECORDS_ENVIRONMENT and `recordsResolver`.
 */
export async function newRecords(app: App): Promise<Records> {
  const org = await newOrganization(app)
  const marker = `Zq${randomUUID().replace(/-/g, '').slice(0, 12)}`
  const users = new Map<string, TestUser>()
  const userWith = async (...roles: Role[]) => {
    const key = roles.join(',')
    let user = users.get(key)
    if (!user) {
      user = await org.user(...roles)
      users.set(key, user)
    }
    return user
  }
  const admin = await userWith('ADMIN')
  const nurse = await userWith('NURSE')
  const doctor = await userWith('PROVIDER')
  const biller = await userWith('BILLING')

  const call = async (user: TestUser, method: 'POST' | 'PUT', url: string, payload: object) => {
    const response = await app.inject({ method, url, headers: bearer(user.token), payload })
    expect(response.statusCode, `${method} ${url}: ${response.body}`).toBeLessThan(300)
    return response.json().data as { id: number }
  }

  const webhook = await call(admin, 'POST', '/api/webhooks', {
    url: `https://${RECORDS_WEBHOOK_HOST}/ehr`,
    events: ['*'],
  })
  const patient = await call(
    nurse,
    'POST',
    '/api/patients',
    patientBody({
      identification: { firstName: 'Ada', lastName: marker, dateOfBirth: '1984-07-12', gender: 'Female' },
    }),
  )
  // The patient's own account, for the routes about it.
  await call(admin, 'POST', `/api/patients/${patient.id}/account`, {
    email: `patient.${randomUUID()}@example.test`,
    invite: 'temporaryPassword',
  })
  const clinical = `/api/patients/${patient.id}`
  const vitals = await call(nurse, 'POST', `${clinical}/vitals`, { heartRate: 72 })
  const labResults = await call(doctor, 'POST', `${clinical}/lab-results`, {
    testCode: '2345-7',
    testName: `Glucose ${marker}`,
    value: 95,
  })
  const conditions = await call(doctor, 'POST', `${clinical}/conditions`, {
    icd10Code: 'I10',
    description: `Hypertension ${marker}`,
  })
  const allergies = await call(doctor, 'POST', `${clinical}/allergies`, {
    substance: marker,
    category: 'FOOD',
  })
  const medications = await call(doctor, 'POST', `${clinical}/medications`, {
    name: `Atorvastatin ${marker}`,
  })

  const provider = await call(admin, 'POST', '/api/providers', providerBody({ lastName: marker }))
  await app.db.updateTable('providers').set({ user_id: doctor.id }).where('id', '=', provider.id).execute()
  const exception = await call(admin, 'POST', `/api/providers/${provider.id}/exceptions`, {
    date: daysFromToday(30),
    kind: 'TIME_OFF',
    reason: marker,
  })
  const appointment = await call(nurse, 'POST', '/api/appointments', {
    patientId: patient.id,
    providerId: provider.id,
    appointmentDate: daysFromToday(7),
    appointmentTime: '10:00:00',
    reason: marker,
  })
  const room = await call(nurse, 'POST', '/api/telehealth/rooms', { appointmentId: appointment.id })
  const encounter = await call(doctor, 'POST', '/api/encounters', {
    patientId: patient.id,
    providerId: provider.id,
    encounterDate: daysFromToday(0),
    encounterType: 'OFFICE_VISIT',
    chiefComplaint: marker,
  })
  const message = await call(nurse, 'POST', '/api/messages', {
    recipientId: doctor.id,
    subject: marker,
    body: `About ${marker}`,
    patientId: patient.id,
  })
  const invoice = await call(biller, 'POST', '/api/billing/invoices', {
    patientId: patient.id,
    dueDate: daysFromToday(30),
    lineItems: [{ code: '99213', description: marker, quantity: 1, unitPrice: 12_500 }],
  })
  const upload = multipart([
    ['title', marker],
    ['category', 'LAB_REPORT'],
    { fileName: 'report.pdf', contentType: 'application/pdf', content: Buffer.from(`%PDF-1.7\n${marker}\n`) },
  ])
  const uploaded = await app.inject({
    method: 'POST',
    url: `${clinical}/documents`,
    headers: { ...bearer(nurse.token), ...upload.headers },
    payload: upload.payload,
  })
  expect(uploaded.statusCode, uploaded.body).toBe(201)
  // An account of its own (not one of the makers, whose tokens other requests use), named with the
  // marker, and a confidential client.
  const account = await org.user('FRONT_DESK')
  const named = await app.inject({
    method: 'PATCH',
    url: `/api/users/${account.id}`,
    headers: bearer(admin.token),
    payload: { lastName: marker },
  })
  expect(named.statusCode, `PATCH /api/users/${account.id}: ${named.body}`).toBe(200)
  const client = await call(admin, 'POST', '/api/clients', { name: `Sync ${marker}`, roles: ['BILLING'] })
  // A SMART app named with the marker, and the doctor's grant to it (as the consent page records it).
  const smartApp = await call(admin, 'POST', '/api/smart-apps', {
    name: `Charts ${marker}`,
    type: 'public',
    redirectUris: ['https://charts.example.com/callback'],
    scopes: ['launch', 'openid', 'patient/Patient.rs'],
    launchUrl: 'https://charts.example.com/launch',
  })
  const appGrant = await app.db
    .transaction()
    .execute((trx) =>
      recordGrant(trx, { organizationId: org.id, userId: doctor.id, appId: smartApp.id, scopes: ['launch'] }),
    )
  // Creating the patient above produced a delivery for the webhook (it subscribes to every event).
  const delivery = await app.db
    .selectFrom('webhook_deliveries')
    .select('id')
    .where('webhook_id', '=', webhook.id)
    .executeTakeFirstOrThrow()

  return {
    org,
    marker,
    makers: { admin, nurse, doctor, biller },
    ids: {
      patient: patient.id,
      vitals: vitals.id,
      'lab-results': labResults.id,
      conditions: conditions.id,
      allergies: allergies.id,
      medications: medications.id,
      message: message.id,
      room: room.id,
      invoice: invoice.id,
      document: uploaded.json().data.id,
      webhook: webhook.id,
      delivery: delivery.id,
      provider: provider.id,
      exception: exception.id,
      appointment: appointment.id,
      encounter: encounter.id,
      user: account.id,
      client: client.id,
      'smart-app': smartApp.id,
      'app-grant': appGrant,
      organization: org.id,
    },
    userFor(allow) {
      if (allow === 'public' || allow === 'authenticated') return userWith('ADMIN')
      return userWith(...allow)
    },
  }
}
