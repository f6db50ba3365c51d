import type { LightMyRequestResponse } from 'fastify'
import { expect } from 'vitest'
import type { App } from '../../../src/app.js'
import type { VersionedTable } from '../../../src/lib/record-history.js'
import { stubDns } from '../../helpers/dns.js'
import {
  bearer,
  createPatient,
  daysFromToday,
  encounterNote,
  everyDay,
  newOrganization,
  patientBody,
  providerBody,
  type TestOrganization,
  type TestUser,
} from '../../helpers/factories.js'
import { multipart } from '../../helpers/multipart.js'
import { createProvider, newClinic, newPractice } from '../../helpers/scheduling.js'

/**
 * The table of versions.test.ts: for each kind of versioned record, how to make one, change it,
 * write it conditionally and read its list. The suite runs the rules common to all of them over it.
 */

export type Answer = LightMyRequestResponse
export type Headers = Record<string, string>
export type Data = Record<string, unknown>

// Webhook registration resolves hosts: the suite's apps get this stub, so that nothing depends on
// real DNS; nothing is delivered (no worker runs).
export const HOOK_URL = 'https://hooks.example.test/ehr'
export const OTHER_URL = 'https://other.example.test/ehr'
const dns: Record<string, string[]> = {
  'hooks.example.test': ['93.184.216.34'],
  'other.example.test': ['93.184.216.35'],
  'internal.example.test': ['10.0.0.5'],
}
export const resolveHost = stubDns(dns)

export const MERGE_PATCH = { 'content-type': 'application/merge-patch+json' }
/** What setup sends where a write needs If-Match (REQUIRE_IF_MATCH): any version. */
const ANY_VERSION = { 'if-match': '*' }

/** Where records of a kind are made: an organization, its users, and the records they belong to. */
export interface Scope {
  on: App
  org: TestOrganization
  /** The user who makes, reads and writes the records. */
  user: TestUser
  /** Other users with a part: the admin who deletes, a message's recipient. */
  as: Record<string, TestUser>
  /** Related records: the patient, the provider. */
  related: Record<string, number>
}

/** One record, as made. */
export interface Subject extends Scope {
  id: number
  url: string
  created: Answer
  /** What made it (the creation body), for writes that send the same again. */
  body: Data
}

interface Call {
  method?: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'
  payload?: unknown
  headers?: Headers
  user?: TestUser | undefined
}

export function call(scope: Scope, url: string, { method = 'GET', payload, headers = {}, user }: Call = {}) {
  return scope.on.inject({
    method,
    url,
    headers: { ...bearer((user ?? scope.user).token), ...headers },
    ...(payload === undefined ? {} : { payload: payload as object }),
  })
}

/** POSTs a record to `url` and expects 201. */
export async function made(scope: Scope, url: string, body: Data): Promise<Subject> {
  const created = await call(scope, url, { method: 'POST', payload: body })
  expect(created.statusCode, created.body).toBe(201)
  const id = created.json().data.id as number
  return { ...scope, id, url: `${url}/${id}`, created, body }
}

export type Send = (subject: Subject, headers?: Headers) => Promise<Answer>
type Payload = object | ((subject: Subject) => unknown)

/** A request to the record's URL (`path` after it), by the scope's user or the one of `as`. */
const request =
  (method: NonNullable<Call['method']>, payload?: Payload, path = '', as?: string): Send =>
  (s, headers = {}) =>
    call(s, `${s.url}${path}`, {
      method,
      payload: typeof payload === 'function' ? payload(s) : payload,
      headers: method === 'PATCH' ? { ...MERGE_PATCH, ...headers } : headers,
      user: as === undefined ? undefined : s.as[as],
    })
export const get: Send = request('GET')
const put = (payload: Payload, path = '', as?: string) => request('PUT', payload, path, as)
export const patch = (payload: unknown, as?: string) => request('PATCH', () => payload, '', as)
const post = (path: string, payload?: Payload) => request('POST', payload, path)
const remove = (as?: string) => request('DELETE', undefined, '', as)
/** A change made without regard to the version (setup, another client). */
const anyVersion = (send: Send) => (s: Subject) => send(s, ANY_VERSION)

/** A conditional write: one that checks If-Match. */
export interface Write {
  name: string
  send: Send
  /** Its answer when it goes through; 200 unless said. */
  status?: number
  /** Brings the record to where this write applies, changing it (by default the kind's change). */
  before?: ((subject: Subject) => Promise<unknown>) | null
  /** Sending it again is harmless (no deletion or state change). */
  repeatable?: boolean
  deletes?: boolean
  check?(answer: Answer, subject: Subject): void
}

/** One step of a record's life: it raises the version by one. */
interface Step {
  name: string
  send(subject: Subject, previous?: Answer): Promise<Answer | undefined>
  status?: number
  /** The answer holds another record (a payment, an exception), not this one. */
  other?: boolean
  check?(answer: Answer | undefined, state: Data): void
}
const step = (name: string, send: Send, more: Partial<Step> = {}): Step => ({
  name,
  send: (s) => send(s),
  ...more,
})

/** A write that sends what the record already holds; `always`: still so once the record changed. */
interface NoOp {
  name: string
  send: Send
  always?: boolean
}
const SAME: NoOp = { name: 'PUT of the same', send: put((s) => s.body) }
const EMPTY_PATCH: NoOp = { name: 'empty PATCH', send: patch({}), always: true }

export interface Kind {
  name: string
  /** Where its rows are stored. */
  table: VersionedTable
  scope(on: App): Promise<Scope>
  make(scope: Scope): Promise<Subject>
  /** The version a new record has; 1 unless said. */
  firstVersion?: unknown
  /** The record has no GET of its own (its list entry stands for it). */
  unread?: true
  /** What else the API shows of the record, beside its read and its list. */
  also?(subject: Subject): Promise<Data>
  /** A real change, as another client would make it: the version goes up by one. */
  change(subject: Subject): Promise<unknown>
  /** What the record shows after `change`. */
  changed?: Data
  history: Step[]
  writes: Write[]
  noOps?: NoOp[]
  /** The event types of the organization's outbox after the record was made and changed once. */
  events?: string[]
  /** Merge patches refused with 422, with what the error details name. */
  badPatches?(subject: Subject): [unknown, string?][]
  list: {
    path(scope: Scope): string
    /** What every read of the list sends (a folder). */
    query?: string
    /** Who reads the list, where not the scope's user. */
    as?: string
    /** A filter other than the one a cursor was issued for. */
    otherFilter: string
    sort: string
  }
  /** The end of a record's life, and how sync pages show the record afterwards. */
  end?: { send(subject: Subject): Promise<unknown>; shows(subject: Subject, version: number): unknown }
  /** A filter of the list, which the kind's records match, and a record in the scope it leaves out. */
  filter?: { query(scope: Scope): string; outside(scope: Scope): Promise<Subject> }
  /** The same organization's scope for another list of the kind (another patient's). */
  elsewhere?(scope: Scope): Promise<Scope>
  /** What another organization's user gets for a write: 403 unless they may not learn it exists. */
  foreign?: number
}

export const tombstone = (subject: Subject) => ({
  id: subject.id,
  deleted: true,
  deletedAt: expect.any(String),
})
const showsWith = (shown: Data) => (s: Subject, version: number) =>
  expect.objectContaining({ id: s.id, version, ...shown })

let unique = 0
const next = () => {
  unique += 1
  return unique
}

// ---- The kinds ---------------------------------------------------------------------------------

export const patients: Kind = {
  name: 'patients',
  table: 'patients',
  async scope(on) {
    const org = await newOrganization(on)
    return { on, org, user: await org.user('NURSE'), as: { admin: await org.user('ADMIN') }, related: {} }
  },
  make: (scope) => made(scope, '/api/patients', patientBody()),
  change: anyVersion(put(() => patientBody())),
  history: [
    step(
      'PUT',
      put(() => patientBody()),
    ),
  ],
  writes: [
    { name: 'PUT', send: put(() => patientBody()), repeatable: true },
    { name: 'PATCH', send: patch({ preferredLanguage: 'es' }), repeatable: true },
    { name: 'DELETE', send: remove('admin'), deletes: true },
  ],
  noOps: [
    SAME,
    EMPTY_PATCH,
    // Another writer sending the same values changes nothing either.
    { name: 'PUT of the same by another user', send: put((s) => s.body, '', 'admin') },
    {
      name: 'PATCH of a value it has by another user',
      send: patch({ identification: { firstName: 'Jane' } }, 'admin'),
    },
  ],
  events: ['patient.created', 'patient.updated'],
  badPatches: () => [
    [{ id: 5 }],
    [{ version: 9 }],
    [{ createdAt: '2020-01-01T00:00:00Z' }],
    [{ identification: { firstName: null } }],
    [['not', 'an', 'object']],
    // No emergency contact yet: a patch giving only its name leaves it without the required telephone.
    [{ emergencyContact: { name: 'Bo' } }, 'emergencyContact.phoneNumber'],
    [{ identification: { dateOfBirth: '2999-01-01' } }],
  ],
  list: { path: () => '/api/patients', otherFilter: 'status=INACTIVE', sort: 'lastName,asc' },
  end: { send: remove('admin'), shows: tombstone },
  filter: {
    query: () => 'status=ACTIVE',
    outside: (scope) => made(scope, '/api/patients', patientBody({ status: 'INACTIVE' })),
  },
}

export const CONDITION = {
  icd10Code: 'E11.9',
  description: 'Type 2 diabetes mellitus',
  onsetDate: '2019-04-01',
  severity: 'MODERATE',
  note: 'Diet controlled',
}

export async function patientScope(on: App, role: 'PROVIDER' | 'NURSE' = 'PROVIDER'): Promise<Scope> {
  const org = await newOrganization(on)
  const user = await org.user(role)
  return { on, org, user, as: {}, related: { patientId: await createPatient(on, user) } }
}

const anotherPatient = async (scope: Scope): Promise<Scope> => ({
  ...scope,
  related: { ...scope.related, patientId: await createPatient(scope.on, scope.user) },
})

const withdraw = post('/entered-in-error', { reason: 'Duplicate' })

export const conditions: Kind = {
  name: 'conditions',
  table: 'clinical_records',
  scope: (on) => patientScope(on),
  make: (scope) => made(scope, `/api/patients/${scope.related.patientId}/conditions`, CONDITION),
  change: anyVersion(put(() => ({ ...CONDITION, note: `Reviewed ${next()}` }))),
  history: [
    step('a correction', put({ ...CONDITION, severity: 'SEVERE' })),
    step('entering in error', post('/entered-in-error', { reason: 'Wrong patient' })),
  ],
  writes: [
    { name: 'PUT', send: put({ ...CONDITION, note: 'Corrected' }), repeatable: true },
    { name: 'PATCH', send: patch({ note: 'x' }), repeatable: true },
    {
      name: 'entered-in-error',
      send: withdraw,
      check: (answer) => expect(answer.json().data.enteredInError.reason).toBe('Duplicate'),
    },
  ],
  badPatches: () => [
    [{ id: 5 }],
    [{ version: 9 }],
    [{ recordedBy: 1 }],
    [{ icd10Code: null }],
    [['a']],
    [{ abatementDate: '2018-01-01' }, 'abatementDate'],
    [{ icd10Code: 'not-a-code' }],
  ],
  list: {
    path: (scope) => `/api/patients/${scope.related.patientId}/conditions`,
    otherFilter: 'icd10Code=I10',
    sort: 'effectiveAt,desc',
  },
  // A withdrawal is a change a copy must learn of, even though lists leave such records out.
  end: {
    send: withdraw,
    shows: showsWith({ enteredInError: expect.objectContaining({ reason: 'Duplicate' }) }),
  },
  elsewhere: anotherPatient,
}

export const MEASURED_AT = new Date(Date.now() - 3 * 3600_000).toISOString()

export const VITALS = {
  recordedAt: MEASURED_AT,
  systolic: 120,
  diastolic: 80,
  temperature: { value: 98.6, unit: 'F' },
  heightCm: 180,
  weightKg: 81,
}

/** Each kind of clinical record: its path, a creation body and a member a correction changes. */
const CLINICAL: [string, Data, Data][] = [
  ['vitals', VITALS, { weightKg: 82 }],
  [
    'lab-results',
    { testCode: '2345-7', testName: 'Glucose', value: 95, unit: 'mg/dL', resultedAt: MEASURED_AT },
    { value: 96 },
  ],
  ['conditions', CONDITION, { note: 'Reviewed' }],
  [
    'allergies',
    {
      substance: 'Penicillin',
      category: 'MEDICATION',
      severity: 'MODERATE',
      reactions: [{ manifestation: 'Rash' }],
    },
    { severity: 'SEVERE' },
  ],
  ['medications', { name: 'Atorvastatin', dose: 20, doseUnit: 'mg', frequency: 'Once daily' }, { dose: 40 }],
]

/** Every kind of clinical record, as far as writes that change nothing go. */
export const CLINICAL_KINDS = CLINICAL.map(
  ([path, body, correction]): Kind => ({
    ...conditions,
    name: path,
    make: (scope) => made(scope, `/api/patients/${scope.related.patientId}/${path}`, body),
    change: put({ ...body, ...correction }),
    list: { ...conditions.list, path: (scope) => `/api/patients/${scope.related.patientId}/${path}` },
    noOps: [SAME, EMPTY_PATCH],
  }),
)

export const NOTE = encounterNote()

async function clinicScope(on: App): Promise<Scope> {
  const { org, doctor, admin, patient, provider } = await newClinic(on)
  return { on, org, user: doctor, as: { admin }, related: { patientId: patient.id, providerId: provider.id } }
}

export const sign = post('/sign')
const addendum = (text: string) => post('/addendum', { text })
const statusIs = (status: string) => (answer: Answer | undefined) =>
  expect(answer?.json().data.status).toBe(status)

export const encounters: Kind = {
  name: 'encounters',
  table: 'encounters',
  scope: clinicScope,
  async make(scope) {
    const { patientId, providerId } = scope.related
    return { ...(await made(scope, '/api/encounters', { patientId, providerId, ...NOTE })), body: NOTE }
  },
  change: anyVersion(put(() => ({ ...NOTE, chiefComplaint: `Migraine ${next()}` }))),
  history: [
    step('PUT', put({ ...NOTE, chiefComplaint: 'Migraine' })),
    step('sign', sign, { check: statusIs('SIGNED') }),
    step('an addendum', addendum('Labs normal'), { check: statusIs('AMENDED') }),
    step('another addendum', addendum('Seen again'), {
      check(answer) {
        expect(answer?.json().data.status).toBe('AMENDED')
        expect(answer?.json().data.addenda).toHaveLength(2)
      },
    }),
  ],
  writes: [
    { name: 'PUT', send: put({ ...NOTE, chiefComplaint: 'Dizziness' }), repeatable: true },
    { name: 'PATCH', send: patch({ chiefComplaint: 'x' }), repeatable: true },
    // A signer signs the note as read: not one that changed since.
    { name: 'sign', send: sign },
    { name: 'addendum', send: addendum('Late'), before: anyVersion(sign) },
  ],
  noOps: [SAME, EMPTY_PATCH],
  badPatches: (s) => [
    [{ version: 4 }],
    [{ status: 'SIGNED' }],
    [{ patientId: s.related.patientId }],
    [{ encounterDate: null }],
    [{ soapNote: { assessment: { diagnoses: [{ icd10Code: 'nope', description: 'x' }] } } }],
  ],
  list: { path: () => '/api/encounters', otherFilter: 'status=DRAFT', sort: 'status,asc' },
  end: { send: anyVersion(sign), shows: showsWith({ status: 'SIGNED' }) },
}

/** A provider body as PUT takes it (the hours have a route of their own); a new NPI each call. */
const providerUpdate = (overrides: Data = {}) => {
  const { weeklyHours: _hours, ...body } = providerBody(overrides)
  return body
}
const addException = post('/exceptions', () => ({ date: daysFromToday(10 + next()), kind: 'TIME_OFF' }))
const hours = (dayOfWeek: string) => ({
  weeklyHours: [{ dayOfWeek, startTime: '09:00:00', endTime: '10:00:00' }],
})

export const providers: Kind = {
  name: 'providers',
  table: 'providers',
  async scope(on) {
    const org = await newOrganization(on)
    return { on, org, user: await org.user('ADMIN'), as: {}, related: {} }
  },
  async make(scope) {
    const body = providerUpdate()
    const weeklyHours = everyDay(['09:00', '12:00'], ['13:00', '17:00'])
    return { ...(await made(scope, '/api/providers', { ...body, weeklyHours })), body }
  },
  change: anyVersion(put(() => providerUpdate())),
  history: [
    step(
      'PUT',
      put(() => providerUpdate({ specialty: 'Cardiology' })),
    ),
    step('PUT of the hours', put(hours('MONDAY'), '/hours')),
    step('an exception added', addException, { status: 201, other: true }),
    {
      name: 'the exception removed',
      send: (s, added) => call(s, `${s.url}/exceptions/${added?.json().data.id}`, { method: 'DELETE' }),
      other: true,
    },
  ],
  writes: [
    {
      name: 'PUT',
      send: put(() => providerUpdate({ lastName: 'Curie' })),
      repeatable: true,
      check: (answer) => expect(answer.json().data.lastName).toBe('Curie'),
    },
    { name: 'PATCH', send: patch({ specialty: 'Cardiology' }), repeatable: true },
    {
      name: 'PUT of the hours',
      send: put(hours('TUESDAY'), '/hours'),
      repeatable: true,
      check: (answer) => expect(answer.json().data.weeklyHours).toEqual(hours('TUESDAY').weeklyHours),
    },
    { name: 'an exception added', send: addException, status: 201 },
    {
      name: 'an exception removed',
      async before(s) {
        const added = await addException(s, ANY_VERSION)
        expect(added.statusCode, added.body).toBe(201)
        s.related.exceptionId = added.json().data.id
      },
      send: (s, headers) =>
        call(s, `${s.url}/exceptions/${s.related.exceptionId}`, { method: 'DELETE', headers }),
    },
  ],
  noOps: [
    SAME,
    EMPTY_PATCH,
    {
      name: 'PUT of the same hours in another order',
      send: put({ weeklyHours: everyDay(['13:00', '17:00'], ['09:00', '12:00']) }, '/hours'),
    },
  ],
  badPatches: () => [
    [{ version: 5 }],
    [{ id: 9 }],
    [{ weeklyHours: [] }],
    [{ npi: '1234567890' }],
    [{ lastName: null }],
  ],
  list: { path: () => '/api/providers', otherFilter: 'active=true', sort: 'lastName,asc' },
}

/** A free slot of any one provider: the next half hour between 09:00 and 17:00, from a week ahead. */
let slot = 0
function nextSlot() {
  slot += 1
  const minutes = 9 * 60 + (slot % 16) * 30
  const time = `${String(Math.floor(minutes / 60)).padStart(2, '0')}:${String(minutes % 60).padStart(2, '0')}:00`
  return { appointmentDate: daysFromToday(7 + Math.floor(slot / 16)), appointmentTime: time }
}

const appointmentOf = (scope: Scope, providerId = scope.related.providerId) =>
  made(scope, '/api/appointments', {
    patientId: scope.related.patientId,
    providerId,
    ...nextSlot(),
    reason: 'Check-up',
    notes: 'Fasting',
  })

const cancel = post('/cancel')

export const appointments: Kind = {
  name: 'appointments',
  table: 'appointments',
  async scope(on) {
    const { org, nurse, admin, patient, provider } = await newPractice(on)
    return {
      on,
      org,
      user: nurse,
      as: { admin },
      related: { patientId: patient.id, providerId: provider.id },
    }
  },
  make: (scope) => appointmentOf(scope),
  change: anyVersion(put(() => ({ notes: `Not fasting ${next()}` }))),
  history: [
    step('PUT', put({ status: 'CONFIRMED' })),
    step('cancel', post('/cancel', { reason: 'Ill' }), { check: statusIs('CANCELLED') }),
  ],
  writes: [
    { name: 'PUT', send: put({ notes: 'Moved' }), repeatable: true },
    { name: 'PATCH', send: patch({ notes: 'x' }), repeatable: true },
    { name: 'cancel', send: cancel, check: statusIs('CANCELLED') },
  ],
  noOps: [
    {
      name: 'PUT of the same',
      async send(s, headers) {
        const { appointmentTime, reason, notes, status } = (await get(s)).json().data
        return put({ appointmentTime, reason, notes, status })(s, headers)
      },
    },
    EMPTY_PATCH,
  ],
  events: ['patient.created', 'appointment.created', 'appointment.updated'],
  badPatches: (s) => [
    [{ version: 3 }],
    [{ patientId: s.related.patientId }],
    [{ duration: 7 }],
    [{ appointmentTime: null }],
  ],
  list: { path: () => '/api/appointments', otherFilter: 'status=SCHEDULED', sort: 'status,asc' },
  end: { send: anyVersion(cancel), shows: showsWith({ status: 'CANCELLED' }) },
  filter: {
    query: (scope) => `providerId=${scope.related.providerId}`,
    async outside(scope) {
      const other = await createProvider(scope.on, scope.as.admin as TestUser)
      return appointmentOf(scope, other.id)
    },
  },
}

export const HOOK_EVENTS = ['patient.created', 'patient.updated']

export const webhooks: Kind = {
  name: 'webhooks',
  table: 'webhooks',
  async scope(on) {
    const org = await newOrganization(on)
    return { on, org, user: await org.user('ADMIN'), as: {}, related: {} }
  },
  make: (scope) => made(scope, '/api/webhooks', { url: HOOK_URL, events: HOOK_EVENTS }),
  change: anyVersion(patch({ active: false })),
  changed: { active: false },
  history: [
    step('PUT', put({ url: OTHER_URL, events: ['*'] })),
    step('rotation', post('/rotate-secret', {})),
  ],
  writes: [
    { name: 'PUT', send: put({ url: OTHER_URL, events: ['*'] }), repeatable: true },
    { name: 'PATCH', send: patch({ events: ['invoice.created'] }), repeatable: true },
    {
      name: 'rotation',
      send: post('/rotate-secret', {}),
      check: (answer) => expect(answer.json().data.secret).toMatch(/^whsec_/),
    },
    { name: 'DELETE', send: remove(), deletes: true },
  ],
  noOps: [
    { name: 'PUT of the same', send: put({ url: HOOK_URL, events: HOOK_EVENTS, active: true }) },
    EMPTY_PATCH,
  ],
  badPatches: () => [
    [{ id: 5 }],
    [{ version: 9 }],
    [{ secret: 'a-new-secret-of-some-length' }],
    [{ url: null }],
    [{ events: [] }],
    [{ url: 'https://internal.example.test/ehr' }],
    [['not', 'an', 'object']],
  ],
  list: { path: () => '/api/webhooks', otherFilter: 'active=false', sort: 'url,asc' },
  end: { send: remove(), shows: tombstone },
  filter: {
    query: () => 'active=true',
    async outside(scope) {
      const inactive = await webhooks.make(scope)
      await webhooks.change(inactive)
      return inactive
    },
  },
}

const invoiceBody = (patientId: number | undefined, issue = false) => ({
  patientId,
  dueDate: '2026-12-31',
  issue,
  lineItems: [{ code: '99213', description: 'Visit', quantity: 1, unitPrice: 10_000 }],
})

const invoices: Kind = {
  name: 'invoices',
  table: 'invoices',
  async scope(on) {
    const org = await newOrganization(on)
    const patientId = await createPatient(on, await org.user('PROVIDER'))
    return { on, org, user: await org.user('BILLING'), as: {}, related: { patientId } }
  },
  make: (scope) => made(scope, '/api/billing/invoices', invoiceBody(scope.related.patientId)),
  change: anyVersion(post('/issue')),
  changed: { status: 'ISSUED' },
  history: [
    step('issue', post('/issue')),
    {
      name: 'a payment',
      send: (s) =>
        call(s, '/api/billing/payments', {
          method: 'POST',
          payload: { invoiceId: s.id, amount: 1_000, method: 'CARD' },
        }),
      status: 201,
      other: true,
      check: (answer, state) => expect(answer?.json().data.invoice.version).toBe(state.version),
    },
  ],
  writes: [
    // A draft changes only by being issued: what is stale here is a version it never had.
    { name: 'issue', send: post('/issue'), before: null },
    { name: 'void', send: post('/void'), check: statusIs('VOID') },
  ],
  list: { path: () => '/api/billing/invoices', otherFilter: 'status=ISSUED', sort: 'number,asc' },
  filter: {
    query: () => 'status=DRAFT',
    outside: (scope) => made(scope, '/api/billing/invoices', invoiceBody(scope.related.patientId, true)),
  },
}

/** Marks a message read, as its recipient unless another user is given. */
export const markRead = (s: Subject, headers: Headers = {}, user = s.as.recipient) =>
  call(s, `${s.url}/read`, { method: 'PUT', headers, user })

export const messages: Kind = {
  name: 'messages',
  table: 'messages',
  async scope(on) {
    const org = await newOrganization(on)
    return {
      on,
      org,
      user: await org.user('PROVIDER'),
      as: { recipient: await org.user('NURSE') },
      related: {},
    }
  },
  make: (scope) =>
    made(scope, '/api/messages', {
      recipientId: scope.as.recipient?.id,
      subject: `Glucose ${next()}`,
      body: 'Please recheck.',
    }),
  change: (s) => markRead(s, ANY_VERSION),
  changed: { readAt: expect.any(String) },
  history: [{ name: 'being read', send: (s) => markRead(s) }],
  // Being read is a message's only change.
  writes: [{ name: 'read', send: (s, headers) => markRead(s, headers), before: null }],
  list: {
    path: () => '/api/messages',
    query: 'folder=inbox',
    as: 'recipient',
    otherFilter: 'unread=true',
    sort: 'createdAt,asc',
  },
  // Another organization's user does not learn the message exists.
  foreign: 404,
}

async function uploaded(scope: Scope, title = `Report ${next()}`, category = 'LAB_REPORT'): Promise<Subject> {
  const body = multipart([
    ['title', title],
    ['category', category],
    { fileName: 'report.txt', contentType: 'text/plain', content: Buffer.from(`${title}\n`) },
  ])
  const created = await scope.on.inject({
    method: 'POST',
    url: `/api/patients/${scope.related.patientId}/documents`,
    headers: { ...bearer(scope.user.token), ...body.headers },
    payload: body.payload,
  })
  expect(created.statusCode, created.body).toBe(201)
  const id = created.json().data.id as number
  return { ...scope, id, url: `/api/documents/${id}`, created, body: { title } }
}

/** A change of the document's row outside the API (there is no metadata update route): the database raises the version. */
const retitle = async (s: Subject, title: string) => {
  await s.on.db.updateTable('documents').set({ title }).where('id', '=', s.id).execute()
  return undefined
}

const documents: Kind = {
  name: 'documents',
  table: 'documents',
  scope: (on) => patientScope(on),
  make: (scope) => uploaded(scope),
  firstVersion: expect.any(Number),
  unread: true,
  also: async (s) => ({ downloads: (await call(s, `${s.url}/download`)).statusCode === 200 }),
  change: (s) => retitle(s, `Renamed ${next()}`),
  history: [
    { name: 'a new title', send: (s) => retitle(s, 'Renamed') },
    {
      name: 'another title',
      send: (s) => retitle(s, 'Renamed again'),
      check: (_answer, state) => expect(state.title).toBe('Renamed again'),
    },
  ],
  writes: [
    {
      name: 'DELETE',
      send: remove(),
      deletes: true,
      check: (answer, s) => expect(answer.json().data).toEqual({ id: s.id }),
    },
  ],
  list: {
    path: (scope) => `/api/patients/${scope.related.patientId}/documents`,
    otherFilter: 'category=IMAGING',
    sort: 'title,asc',
  },
  end: { send: remove(), shows: tombstone },
  filter: { query: () => 'category=LAB_REPORT', outside: (scope) => uploaded(scope, 'Imaging', 'IMAGING') },
  elsewhere: anotherPatient,
}

export const KINDS = [
  patients,
  conditions,
  encounters,
  providers,
  appointments,
  webhooks,
  invoices,
  messages,
  documents,
]
