import { randomBytes, randomInt } from 'node:crypto'
import type { Middleware } from 'openapi-fetch'
import { Webhook } from 'standardwebhooks'
import { type ApiClient, createApiClient, type EventBody, type webhooks } from '../client/index.js'
import { startWebhookReceiver } from './receiver.js'

export interface Credentials {
  username: string
  password: string
}

export interface WalkOptions {
  /** Where the service answers, e.g. http://127.0.0.1:8080 */
  baseUrl: string
  /** An account with the ADMIN and PROVIDER roles (the bootstrap administrator has both). */
  admin: Credentials
  /** Receives the message; without it the administrator writes to themself. */
  recipient?: Credentials
  /** The address the webhook receiver listens on; the service must be able to reach it. */
  receiverHost?: string
  /** How long to wait for the signed webhook calls. */
  webhookTimeoutMs?: number
  /** Called after each step, e.g. to print progress. */
  onStep?: (step: string, detail: string) => void
  /** Added to every client the walk makes, e.g. to watch each response through a contract proxy. */
  middleware?: Middleware
}

export interface WalkResult {
  steps: string[]
  /** The FRONT_DESK account the administrator created, which registered the patient and booked. */
  frontDeskUserId: number
  patientId: number
  appointmentId: number
  invoiceId: number
  /** Every event received and verified, by name. */
  events: Partial<{ [E in keyof webhooks]: EventBody<E>[] }>
}

/** The events the day must produce; each must arrive signed with the webhook's secret. */
const EXPECTED_EVENTS = [
  'patient.created',
  'appointment.created',
  'invoice.created',
  'payment.received',
] as const satisfies ReadonlyArray<keyof webhooks>

/** The answer of an openapi-fetch call, or an error naming the step, the status and the error body. */
function ok<T>(step: string, result: { data?: T; error?: unknown; response: Response }): T {
  if (!result.response.ok || result.data === undefined) {
    throw new Error(`${step}: HTTP ${result.response.status} ${JSON.stringify(result.error ?? null)}`)
  }
  return result.data
}

/** A random National Provider Identifier with a valid Luhn check digit (over 80840 + nine digits). */
function randomNpi(): string {
  const base = `${randomInt(1, 10)}${String(randomInt(0, 100_000_000)).padStart(8, '0')}`
  const digits = `80840${base}`.split('').map(Number).reverse()
  const sum = digits.reduce((total, digit, index) => {
    if (index % 2 !== 0) return total + digit
    const doubled = digit * 2
    return total + (doubled > 9 ? doubled - 9 : doubled)
  }, 0)
  return `${base}${(10 - (sum % 10)) % 10}`
}

const isoDate = (date: Date) => date.toISOString().slice(0, 10)

async function signIn(client: ApiClient, credentials: Credentials, step = 'log in'): Promise<string> {
  const { data } = ok(step, await client.POST('/api/auth/login', { body: credentials }))
  // Services from before AUTH_004 answered a temporary password with 200 and no token.
  if (!('token' in data)) throw new Error(`${step}: ${credentials.username} must change their password first`)
  return data.token
}

/**
 * The first sign-in of an account created with a temporary password: refused with 403 AUTH_004
 * (no tokens), then the password is changed without a token, then the sign-in succeeds.
 */
async function firstSignIn(client: ApiClient, username: string, temporaryPassword: string): Promise<string> {
  const step = 'front desk signs in'
  const refused = await client.POST('/api/auth/login', { body: { username, password: temporaryPassword } })
  const code = refused.error?.error.code
  if (refused.response.status !== 403 || code !== 'AUTH_004') {
    throw new Error(
      `${step}: a temporary password must get 403 AUTH_004, got HTTP ${refused.response.status} ${code}`,
    )
  }
  const password = `smoke ${randomBytes(12).toString('base64url')}`
  ok(
    step,
    await client.POST('/api/auth/change-password', {
      body: { username, currentPassword: temporaryPassword, newPassword: password },
    }),
  )
  return signIn(client, { username, password }, step)
}

/**
 * A practice's day through the typed client: log in, create a provider with working hours and a
 * front desk account (temporary password, changed at the first sign-in); the front desk registers
 * a patient, finds them by search and books the first free slot tomorrow; then record vital signs,
 * upload and download a document, invoice the visit and pay it, send and read a message, and
 * receive the signed webhook calls of it all. Throws at the first step that does not answer as the
 * document says.
 */
export async function walkPracticeDay(options: WalkOptions): Promise<WalkResult> {
  const steps: string[] = []
  const step = (name: string, detail: string) => {
    steps.push(name)
    options.onStep?.(name, detail)
  }
  const client = (token: () => string | undefined) => {
    const created = createApiClient(options.baseUrl, token)
    if (options.middleware) created.use(options.middleware)
    return created
  }
  let adminToken: string | undefined
  const api = client(() => adminToken)
  const receiver = await startWebhookReceiver(options.receiverHost)
  try {
    adminToken = await signIn(api, options.admin)
    const me = ok('who am I', await api.GET('/api/auth/me')).data
    step('log in', `${me.email} (${me.roles.join(', ')})`)

    const secret = `whsec_${randomBytes(32).toString('base64')}`
    const webhook = ok(
      'register webhook',
      await api.POST('/api/webhooks', { body: { url: receiver.url, events: ['*'], secret } }),
    ).data
    step('register webhook', `#${webhook.id} → ${receiver.url}`)

    const provider = ok(
      'create provider',
      await api.POST('/api/providers', {
        body: {
          firstName: 'Grace',
          lastName: 'Hopper',
          title: 'MD',
          specialty: 'Family Medicine',
          npi: randomNpi(),
          timeZone: 'UTC',
          slotMinutes: 30,
          weeklyHours: (
            ['MONDAY', 'TUESDAY', 'WEDNESDAY', 'THURSDAY', 'FRIDAY', 'SATURDAY', 'SUNDAY'] as const
          ).map((dayOfWeek) => ({ dayOfWeek, startTime: '08:00:00', endTime: '18:00:00' })),
        },
      }),
    ).data
    step('create provider with hours', `#${provider.id}, every day 08:00–18:00 UTC`)

    const deskEmail = `front.desk.${randomBytes(4).toString('hex')}@example.com`
    const desk = ok(
      'create front desk user',
      await api.POST('/api/users', {
        body: {
          email: deskEmail,
          firstName: 'Frank',
          lastName: 'Desk',
          roles: ['FRONT_DESK'],
          invite: 'temporaryPassword',
        },
      }),
    ).data
    if (!desk.temporaryPassword) throw new Error('create front desk user: no temporary password')
    step('create front desk user', `#${desk.id} ${desk.email} (${desk.roles.join(', ')})`)

    let deskToken: string | undefined
    const frontDesk = client(() => deskToken)
    deskToken = await firstSignIn(frontDesk, desk.email, desk.temporaryPassword)
    step('front desk signs in', 'temporary password refused (403 AUTH_004), changed, signed in')

    const lastName = `Doe${randomBytes(3).toString('hex')}`
    const patient = ok(
      'create patient',
      await frontDesk.POST('/api/patients', {
        body: {
          identification: { firstName: 'Jane', lastName, dateOfBirth: '1984-07-12', gender: 'Female' },
          contact: { email: `jane.${lastName.toLowerCase()}@example.com` },
        },
      }),
    ).data
    step('create patient', `#${patient.id} ${patient.mrn}, by the front desk`)

    const found = ok(
      'find patient',
      await frontDesk.GET('/api/patients/search', { params: { query: { q: `jane ${lastName}` } } }),
    ).data
    if (!found.content.some((candidate) => candidate.id === patient.id)) {
      throw new Error(`find patient: #${patient.id} is not among ${found.totalElements ?? 0} matches`)
    }
    step('find patient', `#${patient.id} among ${found.content.length} match(es)`)

    const tomorrow = isoDate(new Date(Date.now() + 24 * 3600 * 1000))
    const slots = ok(
      'available slots',
      await frontDesk.GET('/api/appointments/available-slots', {
        params: { query: { providerId: provider.id, date: tomorrow } },
      }),
    ).data
    const slot = slots.find((candidate) => candidate.available)
    if (!slot) throw new Error(`available slots: none free on ${tomorrow}`)
    const appointment = ok(
      'book appointment',
      await frontDesk.POST('/api/appointments', {
        body: {
          patientId: patient.id,
          providerId: provider.id,
          appointmentDate: tomorrow,
          appointmentTime: slot.startTime,
          reason: 'Annual check-up',
        },
      }),
    ).data
    step(
      'book appointment',
      `#${appointment.id} on ${tomorrow} at ${slot.startTime} (${slots.length} slots), by the front desk`,
    )

    const vitals = ok(
      'record vitals',
      await api.POST('/api/patients/{patientId}/vitals', {
        params: { path: { patientId: patient.id } },
        body: { systolic: 128, diastolic: 82, heartRate: 71, temperature: { value: 36.8, unit: 'C' } },
      }),
    ).data
    step('record vitals', `#${vitals.id}`)

    const pdf = `%PDF-1.4\n% visit summary ${randomBytes(8).toString('hex')}\n%%EOF\n`
    const document = ok(
      'upload document',
      await api.POST('/api/patients/{patientId}/documents', {
        params: { path: { patientId: patient.id } },
        body: { title: 'Visit summary', category: 'CLINICAL_NOTE', file: pdf },
        bodySerializer: (fields) => {
          // The metadata fields first, the file last, as the upload requires.
          const form = new FormData()
          form.append('title', fields.title)
          form.append('category', fields.category)
          form.append('file', new Blob([fields.file], { type: 'application/pdf' }), 'visit-summary.pdf')
          return form
        },
      }),
    ).data
    const downloaded = ok(
      'download document',
      await api.GET('/api/documents/{documentId}/download', {
        params: { path: { documentId: document.id } },
        parseAs: 'text',
      }),
    )
    if (downloaded !== pdf) throw new Error('download document: the bytes differ from the upload')
    step('upload and download document', `#${document.id}, ${document.sizeBytes} bytes`)

    const invoice = ok(
      'create invoice',
      await api.POST('/api/billing/invoices', {
        body: {
          patientId: patient.id,
          dueDate: isoDate(new Date(Date.now() + 30 * 24 * 3600 * 1000)),
          lineItems: [
            {
              code: '99213',
              description: 'Office visit, established patient',
              quantity: 1,
              unitPrice: 12500,
            },
          ],
        },
      }),
    ).data
    const payment = ok(
      'pay invoice',
      await api.POST('/api/billing/payments', {
        params: { header: { 'idempotency-key': randomBytes(16).toString('hex') } },
        body: { invoiceId: invoice.id, amount: invoice.total, method: 'CARD', externalReference: 'smoke' },
      }),
    ).data
    if (payment.invoice.status !== 'PAID') throw new Error(`pay invoice: status ${payment.invoice.status}`)
    step('create and pay invoice', `#${invoice.id}, ${invoice.total} ${invoice.currency} paid`)

    let recipientToken = adminToken
    const inbox = client(() => recipientToken)
    if (options.recipient) recipientToken = await signIn(inbox, options.recipient)
    const recipient = ok('recipient', await inbox.GET('/api/auth/me')).data
    const sent = ok(
      'send message',
      await api.POST('/api/messages', {
        body: {
          recipientId: Number(recipient.id),
          subject: 'Vitals recorded',
          body: 'Please review the blood pressure reading.',
          patientId: patient.id,
        },
      }),
    ).data
    const received = ok(
      'list inbox',
      await inbox.GET('/api/messages', {
        params: { query: { folder: 'inbox', unread: true, sort: 'createdAt,desc' } },
      }),
    ).data
    if (!received.content.some((message) => message.id === sent.id)) {
      throw new Error('list inbox: the message is not among the unread ones')
    }
    const read = ok(
      'read message',
      await inbox.PUT('/api/messages/{id}/read', { params: { path: { id: sent.id } } }),
    ).data
    if (!read.readAt) throw new Error('read message: no read time')
    step('send and read message', `#${sent.id} to ${recipient.email}`)

    const events = await verifiedEvents(receiver.calls, secret, options.webhookTimeoutMs ?? 30_000)
    step(
      'receive signed webhook calls',
      EXPECTED_EVENTS.map((name) => `${name} ×${events[name]?.length ?? 0}`).join(', '),
    )
    ok('remove webhook', {
      ...(await api.DELETE('/api/webhooks/{id}', { params: { path: { id: webhook.id } } })),
      data: true,
    })
    // The walk may run against a real deployment: leave no account behind that can sign in.
    ok(
      'deactivate front desk user',
      await api.POST('/api/users/{id}/deactivate', { params: { path: { id: desk.id } } }),
    )
    return {
      steps,
      frontDeskUserId: desk.id,
      patientId: patient.id,
      appointmentId: appointment.id,
      invoiceId: invoice.id,
      events,
    }
  } finally {
    await receiver.close()
  }
}

/**
 * Waits (bounded) until every expected event has arrived, verifying each call's Standard Webhooks
 * signature and timestamp with the secret; a call that fails verification fails the walk.
 */
async function verifiedEvents(
  calls: Array<{ headers: Record<string, string | string[] | undefined>; body: string }>,
  secret: string,
  timeoutMs: number,
): Promise<WalkResult['events']> {
  const verifier = new Webhook(secret)
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const events: Record<string, unknown[]> = {}
    for (const call of calls) {
      const headers = Object.fromEntries(
        Object.entries(call.headers).map(([name, value]) => [name, String(value)]),
      )
      const body = verifier.verify(call.body, headers) as { event: string }
      events[body.event] = [...(events[body.event] ?? []), body]
    }
    if (EXPECTED_EVENTS.every((name) => events[name]?.length)) return events as WalkResult['events']
    if (Date.now() > deadline) {
      const missing = EXPECTED_EVENTS.filter((name) => !events[name]?.length)
      throw new Error(`receive signed webhook calls: none of ${missing.join(', ')} within ${timeoutMs} ms`)
    }
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}
