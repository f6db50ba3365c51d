import { AsyncLocalStorage } from 'node:async_hooks'
import { type RawBuilder, sql } from 'kysely'
import { integerArrayLiteral, textArrayLiteral } from '../../db/array-literal.js'
import { type Db, inTransaction, type Trx } from '../../db/database.js'
import type { NewAuditRow } from '../../db/tables/audit-log.js'
import type { AuditAction } from '../../schemas/audit.js'
import { insertAuditRows } from './audit-log.js'

/** What the audit record of a change made by the call being served says, ids apart. */
export type ChangeAuditFields = Omit<NewAuditRow, 'resource_ids'>

/** The audit record of the call being served by an audited route that changes records. */
export interface ChangeAudit {
  /** The record its success leaves (outcome SUCCESS, the status the route answers a change with). */
  fields: ChangeAuditFields
  /**
   * The status of the record written with a change, once one was: an answer with that status needs
   * no record of its own.
   */
  writtenStatus: number | null
}

const current = new AsyncLocalStorage<ChangeAudit>()

/** Runs `serve` (a call's handling) so that the changes it makes carry `audit`'s record. */
export const serveWithChangeAudit = (audit: ChangeAudit, serve: () => void): void => current.run(audit, serve)

/** Runs `work` (one entry of a FHIR Bundle) so that the changes it makes carry `audit`'s record. */
export const withChangeAuditOf = <T>(audit: ChangeAudit, work: () => Promise<T>): Promise<T> =>
  current.run(audit, work)

/**
 * Runs `work` so that the changes it makes are recorded as `action` rather than as the call's own
 * (a FHIR update that signs a note: SIGN, as the sign route records it); their record stands for
 * the call's.
 */
export async function auditedAs<T>(action: AuditAction, work: () => Promise<T>): Promise<T> {
  const audit = current.getStore()
  if (!audit) return work()
  const as: ChangeAudit = { fields: { ...audit.fields, action }, writtenStatus: null }
  const result = await current.run(as, work)
  audit.writtenStatus = as.writtenStatus ?? audit.writtenStatus
  return result
}

/**
 * Files the change being made under another rule than its route's: a FHIR write of a record whose
 * REST routes are its kind's own (an Observation that is a lab result); or names its patient, which
 * a FHIR call's path and body do not (a REST one's `patientId`); or the status it is answered with
 * when not its route's (a FHIR conditional update that creates: 201).
 */
export function auditChangeAs(
  rule: Partial<Pick<ChangeAuditFields, 'action' | 'resource_type' | 'patient_id' | 'status_code'>>,
): void {
  const audit = current.getStore()
  if (audit) audit.fields = { ...audit.fields, ...rule }
}

/** The audit record the change being made belongs with, if it is made by an audited call. */
export const currentChangeAudit = (): ChangeAudit | undefined => current.getStore()

/**
 * Writes the audit record of the call being served in `trx`, the transaction of its change of
 * `ids`: the record commits with the change or not at all, as its event does. Nothing outside a
 * call (scripts, workers). `status`: the success status the call answers when its route documents
 * none (a FHIR operation's 202).
 */
export async function auditChange(trx: Trx, ids: number[], status?: number): Promise<void> {
  const audit = current.getStore()
  if (!audit) return
  const fields = status === undefined ? audit.fields : { ...audit.fields, status_code: status }
  await insertAuditRows(trx, [{ ...fields, resource_ids: ids }])
  audit.writtenStatus = fields.status_code
}

/**
 * Makes a change of one statement so that the audit record of the call making it commits with it:
 * the two in one transaction while an audited call is served, the statement alone otherwise. A
 * change that touched nothing (undefined) leaves no record here: the call's answer records itself.
 */
export async function withChangeAudit<R extends { id: number } | undefined>(
  db: Db,
  change: (db: Db) => Promise<R>,
): Promise<R> {
  if (!current.getStore()) return change(db)
  return inTransaction(db, async (trx) => {
    const changed = await change(trx)
    if (changed) await auditChange(trx, [changed.id])
    return changed
  })
}

/** The audit records of the calls that asked for a statement's changes, one array literal per column. */
function auditColumns(audits: readonly (ChangeAudit | undefined)[]) {
  const texts = (value: (fields: ChangeAuditFields) => string | null) =>
    textArrayLiteral(audits.map((audit) => (audit ? value(audit.fields) : null)))
  const integers = (value: (fields: ChangeAuditFields) => number | null | undefined) =>
    integerArrayLiteral(audits.map((audit) => (audit ? (value(audit.fields) ?? null) : null)))
  return {
    occurredAt: texts((fields) => fields.occurred_at.toISOString()),
    organizationId: integers((fields) => fields.organization_id),
    userId: integers((fields) => fields.user_id),
    action: texts((fields) => fields.action),
    resourceType: texts((fields) => fields.resource_type),
    patientId: integers((fields) => fields.patient_id),
    outcome: texts((fields) => fields.outcome),
    statusCode: integers((fields) => fields.status_code),
    requestId: texts((fields) => fields.request_id),
  }
}

export type AuditColumns = ReturnType<typeof auditColumns>

/**
 * Makes the changes of one statement of many rows, each with the audit record of the call that asks
 * for it (`audits[i]` for the i-th change; none for undefined, a change outside an audited call),
 * written by that statement (changesAuditCte): atomic by itself, one round trip, no transaction.
 * `change` runs the statement with the records' columns and answers each row it changed with its
 * place among the changes asked for (`n`, from 1). Answers the row of each change, undefined for
 * one that touched none (and left no record here: the call's answer records itself).
 */
export async function auditedChanges<R>(
  audits: readonly (ChangeAudit | undefined)[],
  change: (columns: AuditColumns) => Promise<readonly (R & { n: number })[]>,
): Promise<(R | undefined)[]> {
  const rows: (R | undefined)[] = audits.map(() => undefined)
  for (const { n, ...row } of await change(auditColumns(audits))) {
    rows[n - 1] = row as R
    const audit = audits[n - 1]
    if (audit) audit.writtenStatus = audit.fields.status_code
  }
  return rows
}

/**
 * The records of auditedChanges as a common table expression of its statement: for each row of the
 * CTE `numbered` (`id`, a row changed; `n`, its change's place among those asked for), the record
 * of the call that asked for it, from the n-th element of each column; none where that is null.
 */
export function changesAuditCte(columns: AuditColumns): RawBuilder<unknown> {
  return sql`audited as (
      insert into audit_log (occurred_at, organization_id, user_id, action, resource_type, resource_ids,
        patient_id, outcome, status_code, request_id)
      select a.occurred_at, a.organization_id, a.user_id, a.action, a.resource_type, array[numbered.id],
        a.patient_id, a.outcome, a.status_code, a.request_id
      from numbered join unnest(${columns.occurredAt}::timestamptz[], ${columns.organizationId}::integer[],
        ${columns.userId}::integer[], ${columns.action}::text[], ${columns.resourceType}::text[],
        ${columns.patientId}::integer[], ${columns.outcome}::text[], ${columns.statusCode}::integer[],
        ${columns.requestId}::text[]
      ) with ordinality as a(occurred_at, organization_id, user_id, action, resource_type, patient_id,
        outcome, status_code, request_id, n) using (n)
      where a.action is not null
      order by n
    )`
}

/**
 * The same record as a common table expression of a change-and-event statement, which inserts it
 * for the row the CTE `changed` returns (none when the change touched none). Each value is cast:
 * the statement may be prepared, and its parameters' types must not depend on their first values.
 */
export function changeAuditCte(fields: ChangeAuditFields): RawBuilder<unknown> {
  return sql`audited as (
      insert into audit_log (occurred_at, organization_id, user_id, action, resource_type, resource_ids,
        patient_id, outcome, status_code, request_id)
      select ${fields.occurred_at}::timestamptz, ${fields.organization_id}::integer, ${fields.user_id}::integer,
        ${fields.action}::text, ${fields.resource_type}::text, array[changed.id], ${fields.patient_id}::integer,
        ${fields.outcome}::text, ${fields.status_code}::integer, ${fields.request_id}::text
      from changed
    )`
}
