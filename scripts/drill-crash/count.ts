import { stat } from 'node:fs/promises'
import path from 'node:path'
import { type RawBuilder, sql } from 'kysely'
import { integerArrayLiteral, textArrayLiteral } from '../../db/array-literal.js'
import type { Db } from '../../db/database.js'

/** What the drill's clients do; each answer with a 2xx status is an acknowledged request. */
export type Operation =
  | 'create patient'
  | 'read patient'
  | 'book appointment'
  | 'create invoice'
  | 'record payment'
  | 'upload document'

/** A request the service answered with 2xx: from then on its effects must survive any crash. */
export interface Acknowledged {
  operation: Operation
  /** Sent as X-Request-Id; the audit record names the request by it. */
  requestId: string
  /** The record the answer named (created, or read). */
  id: number
}

interface Expectation {
  /** The table the record is in, and the condition that makes it complete. */
  table: 'patients' | 'appointments' | 'invoices' | 'payments' | 'documents'
  complete?: string
  /** The audit record every call leaves (src/access/route-access.ts). */
  audit: { resourceType: string; action: string }
  /** The event the change writes into the outbox in its own transaction; its `data.id` is the record. */
  event?: string
}

const EXPECTATIONS: Record<Operation, Expectation> = {
  'create patient': {
    table: 'patients',
    audit: { resourceType: 'patient', action: 'CREATE' },
    event: 'patient.created',
  },
  'read patient': { table: 'patients', audit: { resourceType: 'patient', action: 'READ' } },
  'book appointment': {
    table: 'appointments',
    audit: { resourceType: 'appointment', action: 'CREATE' },
    event: 'appointment.created',
  },
  'create invoice': {
    table: 'invoices',
    audit: { resourceType: 'invoice', action: 'CREATE' },
    event: 'invoice.created',
  },
  'record payment': {
    table: 'payments',
    audit: { resourceType: 'payment', action: 'CREATE' },
    event: 'payment.received',
  },
  'upload document': {
    table: 'documents',
    complete: "status = 'AVAILABLE'",
    audit: { resourceType: 'document', action: 'CREATE' },
  },
}

interface Finding {
  operation: Operation
  requestId: string
  id: number
}

export interface Findings {
  acknowledged: number
  byOperation: Partial<Record<Operation, number>>
  /** Acknowledged, yet the record is not there (or, for a document, not AVAILABLE). */
  missingRecords: Finding[]
  /** Acknowledged, yet no successful audit record names the request, its user, action and resource type. */
  missingAudit: Finding[]
  /** Acknowledged writes whose outbox event is not there. */
  missingEvents: Finding[]
  /** Rows that break an invariant of the schema, acknowledged or not, by invariant. */
  halfWritten: { invariant: string; count: number }[]
  /** Uploads cut off before their answer (PENDING rows): expected after a crash, housekeeping clears them. */
  interruptedUploads: number
}

export interface CountOptions {
  organizationId: number
  /** The user every drill request was made as. */
  userId: number
  acknowledged: readonly Acknowledged[]
  /** Where the document bytes are (`$DATA_DIR/documents`); their presence and size are checked. */
  documentsDir?: string
}

/** The number a `select count(*)::int as count` statement answers. */
const count = async (db: Db, query: RawBuilder<unknown>) =>
  Number(((await query.execute(db)).rows[0] as { count?: number } | undefined)?.count ?? 0)

/** The rows of `table` of the organization among `ids`, complete as the expectation says. */
async function presentIds(db: Db, organizationId: number, expectation: Expectation, ids: number[]) {
  const { rows } = await sql<{ id: number }>`
    select id from ${sql.table(expectation.table)}
    where organization_id = ${organizationId} and id = any(${integerArrayLiteral(ids)}::integer[])
      ${expectation.complete ? sql.raw(`and ${expectation.complete}`) : sql``}
  `.execute(db)
  return new Set(rows.map((row) => Number(row.id)))
}

async function auditedRequests(db: Db, options: CountOptions): Promise<Set<string>> {
  const { rows } = await sql<{ request_id: string; resource_type: string; action: string }>`
    select request_id, resource_type, action from audit_log
    where organization_id = ${options.organizationId}
      and user_id = ${options.userId}
      and outcome = 'SUCCESS'
      and request_id = any(${textArrayLiteral(options.acknowledged.map((entry) => entry.requestId))}::text[])
  `.execute(db)
  return new Set(rows.map((row) => `${row.request_id} ${row.resource_type} ${row.action}`))
}

async function eventKeys(db: Db, organizationId: number): Promise<Set<string>> {
  const events = Object.values(EXPECTATIONS).flatMap((expectation) => expectation.event ?? [])
  const { rows } = await sql<{ event_type: string; id: string }>`
    select event_type, payload->'data'->>'id' as id from outbox_events
    where organization_id = ${organizationId} and event_type = any(${textArrayLiteral(events)}::text[])
  `.execute(db)
  return new Set(rows.map((row) => `${row.event_type} ${row.id}`))
}

/** Rows of the organization that break one of the schema's invariants, whoever wrote them. */
async function halfWritten(db: Db, options: CountOptions) {
  const organization = options.organizationId
  const withoutEvent = (table: Expectation['table'], event: string) =>
    count(
      db,
      sql`select count(*)::int as count from ${sql.table(table)} record
        where record.organization_id = ${organization} and not exists (
          select 1 from outbox_events event where event.organization_id = ${organization}
            and event.event_type = ${event} and event.payload->'data'->>'id' = record.id::text)`,
    )
  const checks: [string, Promise<number>][] = [
    ['patients without their patient.created event', withoutEvent('patients', 'patient.created')],
    [
      'appointments without their appointment.created event',
      withoutEvent('appointments', 'appointment.created'),
    ],
    ['invoices without their invoice.created event', withoutEvent('invoices', 'invoice.created')],
    ['payments without their payment.received event', withoutEvent('payments', 'payment.received')],
    [
      'invoices without line items',
      count(
        db,
        sql`select count(*)::int as count from invoices
          where organization_id = ${organization} and jsonb_array_length(line_items) = 0`,
      ),
    ],
    [
      'invoices whose totals disagree with their lines',
      count(
        db,
        sql`select count(*)::int as count from invoices invoice
          where organization_id = ${organization} and (invoice.total <> invoice.subtotal + invoice.tax
            or invoice.subtotal <> (select coalesce(sum((line->>'amount')::bigint), 0)
              from jsonb_array_elements(invoice.line_items) line))`,
      ),
    ],
    [
      'invoices whose amount paid is not the sum of their payments',
      count(
        db,
        sql`select count(*)::int as count from invoices invoice
          where organization_id = ${organization} and invoice.amount_paid <> (
            select coalesce(sum(payment.amount), 0) from payments payment
            where payment.organization_id = ${organization} and payment.invoice_id = invoice.id)`,
      ),
    ],
    [
      'invoices whose status disagrees with the amount paid',
      count(
        db,
        sql`select count(*)::int as count from invoices
          where organization_id = ${organization} and status <> 'VOID'
            and ((amount_paid = total and total > 0 and status <> 'PAID')
              or (amount_paid > 0 and amount_paid < total and status <> 'PARTIALLY_PAID'))`,
      ),
    ],
    [
      'available documents without size or hash',
      count(
        db,
        sql`select count(*)::int as count from documents
          where organization_id = ${organization} and status = 'AVAILABLE'
            and (size_bytes is null or sha256 is null)`,
      ),
    ],
    [
      'patient counts that disagree with the patients',
      count(
        db,
        sql`select (
            (select coalesce(sum(live_count), 0) from patient_counts where organization_id = ${organization})
            <> (select count(*) from patients where organization_id = ${organization} and deleted_at is null)
          )::int as count`,
      ),
    ],
  ]
  if (options.documentsDir) {
    checks.push(['available documents whose bytes are missing or cut short', missingBytes(db, options)])
  }
  return Promise.all(checks.map(async ([invariant, found]) => ({ invariant, count: await found })))
}

/** AVAILABLE documents of the local store whose file is absent or of another size than recorded. */
async function missingBytes(db: Db, options: CountOptions): Promise<number> {
  const { rows } = await sql<{ storage_key: string; size_bytes: number | string | null }>`
    select storage_key, size_bytes from documents
    where organization_id = ${options.organizationId} and status = 'AVAILABLE'
  `.execute(db)
  const root = options.documentsDir as string
  let missing = 0
  for (const row of rows) {
    // The local store's layout (src/modules/documents/store.ts): two-character shard, then the key.
    const file = path.join(root, row.storage_key.slice(0, 2), row.storage_key)
    const size = await stat(file).then(
      (found) => found.size,
      () => undefined,
    )
    if (size === undefined || size !== Number(row.size_bytes)) missing += 1
  }
  return missing
}

/**
 * Compares what the service acknowledged with what the database holds after the crashes: every
 * acknowledged request must have left its record, its audit record and its outbox event, and no row
 * may be half-written.
 */
export async function countFindings(db: Db, options: CountOptions): Promise<Findings> {
  const byOperation: Partial<Record<Operation, number>> = {}
  for (const entry of options.acknowledged) {
    byOperation[entry.operation] = (byOperation[entry.operation] ?? 0) + 1
  }
  const missingRecords: Finding[] = []
  for (const operation of Object.keys(byOperation) as Operation[]) {
    const entries = options.acknowledged.filter((entry) => entry.operation === operation)
    const present = await presentIds(
      db,
      options.organizationId,
      EXPECTATIONS[operation],
      entries.map((entry) => entry.id),
    )
    missingRecords.push(...entries.filter((entry) => !present.has(entry.id)))
  }
  const audited = await auditedRequests(db, options)
  const missingAudit = options.acknowledged.filter((entry) => {
    const { resourceType, action } = EXPECTATIONS[entry.operation].audit
    return !audited.has(`${entry.requestId} ${resourceType} ${action}`)
  })
  const events = await eventKeys(db, options.organizationId)
  const missingEvents = options.acknowledged.filter((entry) => {
    const event = EXPECTATIONS[entry.operation].event
    return event !== undefined && !events.has(`${event} ${entry.id}`)
  })
  const interruptedUploads = await count(
    db,
    sql`select count(*)::int as count from documents
      where organization_id = ${options.organizationId} and status = 'PENDING'`,
  )
  return {
    acknowledged: options.acknowledged.length,
    byOperation,
    missingRecords: missingRecords.map(({ operation, requestId, id }) => ({ operation, requestId, id })),
    missingAudit: missingAudit.map(({ operation, requestId, id }) => ({ operation, requestId, id })),
    missingEvents: missingEvents.map(({ operation, requestId, id }) => ({ operation, requestId, id })),
    halfWritten: await halfWritten(db, options),
    interruptedUploads,
  }
}

/** How many problems the findings hold: the drill fails unless this is 0. */
export function problemCount(findings: Findings): number {
  return (
    findings.missingRecords.length +
    findings.missingAudit.length +
    findings.missingEvents.length +
    findings.halfWritten.reduce((total, check) => total + check.count, 0)
  )
}

/** `n (operation n, operation n)`: a figure and its split by operation. */
function tally(found: readonly { operation: Operation }[]): string {
  const counts = new Map<Operation, number>()
  for (const entry of found) counts.set(entry.operation, (counts.get(entry.operation) ?? 0) + 1)
  const split = [...counts].map(([operation, n]) => `${operation} ${n}`).join(', ')
  return split ? `${found.length} (${split})` : String(found.length)
}

/** The figures as the drill prints them. */
export function describeFindings(findings: Findings): string {
  const halfWritten = findings.halfWritten.reduce((total, check) => total + check.count, 0)
  const lines = [
    `acknowledged requests:               ${findings.acknowledged} (${Object.entries(findings.byOperation)
      .map(([operation, n]) => `${operation} ${n}`)
      .join(', ')})`,
    `acknowledged, record missing:        ${tally(findings.missingRecords)}`,
    `acknowledged, audit record missing:  ${tally(findings.missingAudit)}`,
    `acknowledged, outbox event missing:  ${tally(findings.missingEvents)}`,
    `half-written records:                ${halfWritten}`,
    ...findings.halfWritten
      .filter((check) => check.count > 0)
      .map((check) => `  ${check.invariant}: ${check.count}`),
    `interrupted uploads (PENDING, cleared by housekeeping): ${findings.interruptedUploads}`,
  ]
  const examples = (label: string, found: Finding[]) =>
    found.length === 0
      ? []
      : [
          `${label}, e.g.: ${found
            .slice(0, 5)
            .map((entry) => `${entry.operation} #${entry.id} (${entry.requestId})`)
            .join('; ')}`,
        ]
  lines.push(
    ...examples('missing records', findings.missingRecords),
    ...examples('missing audit records', findings.missingAudit),
    ...examples('missing outbox events', findings.missingEvents),
  )
  return lines.join('\n')
}
