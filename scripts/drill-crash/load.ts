import { randomBytes } from 'node:crypto'
import type { Acknowledged, Operation } from './count.js'

/** What the clients share across rounds: the records they may refer to, and what was acknowledged. */
export interface Ledger {
  providerId: number
  patients: number[]
  unpaidInvoices: { id: number; total: number }[]
  /** Appointments go to distinct half-hour slots, so that no booking collides with another. */
  nextSlot: number
  acknowledged: Acknowledged[]
  /** Answers other than 2xx, by operation and status. */
  refused: Map<string, number>
  /** Requests that got no answer at all (the kill cut them off). */
  unanswered: number
}

export const newLedger = (providerId: number): Ledger => ({
  providerId,
  patients: [],
  unpaidInvoices: [],
  nextSlot: 0,
  acknowledged: [],
  refused: new Map(),
  unanswered: 0,
})

// An answer later than this is as good as none: a round never waits longer on a request.
const REQUEST_TIMEOUT_MS = 10_000
// The provider works 00:00–23:30 UTC every day: 47 half-hour slots a day, from tomorrow on.
const SLOTS_A_DAY = 47
const DAY_MS = 86_400_000

/** A deterministic generator (mulberry32), so that a drill's choices can be replayed with its seed. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296
  }
}

interface Call {
  operation: Operation
  method: 'GET' | 'POST'
  path: string
  body?: object | FormData
  headers?: Record<string, string>
  /** The record the answer names, from its `data`. */
  recordId: (data: { id: number; total?: number }) => number
  /** Called with the answer's data once acknowledged. */
  onAcknowledged?: (data: { id: number; total?: number }) => void
}

const pdf = (random: () => number) => {
  // 4–48 KB: long enough that a kill can land while the bytes are being written.
  const filler = randomBytes(3 * 1024 * (1 + Math.floor(random() * 12))).toString('base64')
  return `%PDF-1.4\n% drill ${filler}\n%%EOF\n`
}

/** The next request a client makes, chosen at random among the mix (with what it needs existing). */
function nextCall(ledger: Ledger, random: () => number): Call {
  const pick = random()
  const patientId = ledger.patients[Math.floor(random() * ledger.patients.length)]
  if (patientId === undefined || pick < 0.25) {
    const name = randomBytes(4).toString('hex')
    return {
      operation: 'create patient',
      method: 'POST',
      path: '/api/patients',
      body: {
        identification: {
          firstName: 'Drill',
          lastName: `Patient${name}`,
          dateOfBirth: '1980-02-29',
          gender: 'Other',
        },
      },
      recordId: (data) => data.id,
      onAcknowledged: (data) => ledger.patients.push(data.id),
    }
  }
  if (pick < 0.5) {
    return {
      operation: 'read patient',
      method: 'GET',
      path: `/api/patients/${patientId}`,
      recordId: () => patientId,
    }
  }
  if (pick < 0.65) {
    const slot = ledger.nextSlot++
    const minutes = (slot % SLOTS_A_DAY) * 30
    return {
      operation: 'book appointment',
      method: 'POST',
      path: '/api/appointments',
      body: {
        patientId,
        providerId: ledger.providerId,
        appointmentDate: new Date(Date.now() + (1 + Math.floor(slot / SLOTS_A_DAY)) * DAY_MS)
          .toISOString()
          .slice(0, 10),
        appointmentTime: `${String(Math.floor(minutes / 60)).padStart(2, '0')}:${String(minutes % 60).padStart(2, '0')}:00`,
        reason: 'Crash drill',
      },
      recordId: (data) => data.id,
    }
  }
  const invoice = pick >= 0.77 && pick < 0.87 ? ledger.unpaidInvoices.pop() : undefined
  if (invoice) {
    return {
      operation: 'record payment',
      method: 'POST',
      path: '/api/billing/payments',
      headers: { 'idempotency-key': randomBytes(16).toString('hex') },
      body: { invoiceId: invoice.id, amount: invoice.total, method: 'CARD', externalReference: 'drill' },
      recordId: (data) => data.id,
    }
  }
  if (pick < 0.87) {
    return {
      operation: 'create invoice',
      method: 'POST',
      path: '/api/billing/invoices',
      body: {
        patientId,
        dueDate: new Date(Date.now() + 30 * DAY_MS).toISOString().slice(0, 10),
        lineItems: [
          { code: '99213', description: 'Office visit', quantity: 1, unitPrice: 12_500 },
          {
            code: '36415',
            description: 'Venipuncture',
            quantity: 1 + Math.floor(random() * 3),
            unitPrice: 1_000,
          },
        ],
      },
      recordId: (data) => data.id,
      onAcknowledged: (data) => ledger.unpaidInvoices.push({ id: data.id, total: Number(data.total) }),
    }
  }
  const form = new FormData()
  form.append('title', 'Drill upload')
  form.append('category', 'CLINICAL_NOTE')
  form.append('file', new Blob([pdf(random)], { type: 'application/pdf' }), 'drill.pdf')
  return {
    operation: 'upload document',
    method: 'POST',
    path: `/api/patients/${patientId}/documents`,
    body: form,
    recordId: (data) => data.id,
  }
}

export interface RoundLoad {
  baseUrl: string
  token: string
  clients: number
  /** Prefix of this round's request ids, unique to the drill and the round. */
  requestIdPrefix: string
  random: () => number
}

/**
 * Runs `clients` concurrent clients against the service until `stop` resolves (the kill), then
 * waits for the requests in flight to end (each is bounded). Every 2xx answer goes into the ledger.
 */
export async function runLoad(ledger: Ledger, load: RoundLoad, stop: Promise<void>): Promise<void> {
  let stopped = false
  void stop.then(() => {
    stopped = true
  })
  let sequence = 0
  const client = async () => {
    while (!stopped) {
      const call = nextCall(ledger, load.random)
      const requestId = `${load.requestIdPrefix}-${sequence++}`
      const headers: Record<string, string> = {
        authorization: `Bearer ${load.token}`,
        'x-request-id': requestId,
        ...call.headers,
      }
      let body: string | FormData | undefined
      if (call.body instanceof FormData) body = call.body
      else if (call.body) {
        body = JSON.stringify(call.body)
        headers['content-type'] = 'application/json'
      }
      let response: Response
      let text: string
      try {
        response = await fetch(`${load.baseUrl}${call.path}`, {
          method: call.method,
          headers,
          body,
          signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
        })
        text = await response.text()
      } catch {
        ledger.unanswered += 1
        // The service is gone until the round ends: no busy loop of refused connections.
        await new Promise((resolve) => setTimeout(resolve, 50))
        continue
      }
      if (response.status < 200 || response.status >= 300) {
        const key = `${call.operation} ${response.status}`
        ledger.refused.set(key, (ledger.refused.get(key) ?? 0) + 1)
        continue
      }
      const { data } = JSON.parse(text) as { data: { id: number; total?: number } }
      ledger.acknowledged.push({ operation: call.operation, requestId, id: call.recordId(data) })
      call.onAcknowledged?.(data)
    }
  }
  await Promise.all(Array.from({ length: load.clients }, client))
}
