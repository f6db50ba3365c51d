import { Readable } from 'node:stream'
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { NewAuditRow } from '../../db/tables/audit-log.js'
import type { RouteAccess } from '../access/route-access.js'
import { AuditLog } from '../audit/audit-log.js'
import { type ChangeAudit, serveWithChangeAudit } from '../audit/change-audit.js'
import { AppError } from '../errors.js'

type AuditRule = NonNullable<RouteAccess['audit']>

declare module 'fastify' {
  interface FastifyInstance {
    auditLog: AuditLog
  }
  interface FastifyRequest {
    /** Ids of the records a handler returned or changed, for the audit record. */
    auditedIds: number[] | null
    /** The rule the handler's records fall under when not the route's (a FHIR Observation that is a lab result). */
    auditedAs: AuditRule | null
    /** The patient whose record the handler returned, when the call names none (a FHIR read of a Condition). */
    auditedPatientId: number | null
    /** Records of other kinds the handler also returned (a FHIR `_include`), each under its route's rule. */
    auditedAlso: { rule: AuditRule; ids: number[] }[] | null
    /** The record a change made by this call writes with it, on an audited route that changes records. */
    changeAudit: ChangeAudit | null
    /** Ends the announcement that this read's record is coming (AuditLog.expect). */
    auditExpected: (() => void) | null
  }
  interface FastifyContextConfig {
    access?: RouteAccess
    /** The status the route answers a change with, where its schema documents none (a FHIR create's 201). */
    changeStatus?: number
  }
}

export function outcomeOf(statusCode: number): string {
  if (statusCode < 400) return 'SUCCESS'
  if (statusCode === 401 || statusCode === 403) return 'DENIED'
  if (statusCode === 404) return 'NOT_FOUND'
  return statusCode < 500 ? 'REJECTED' : 'ERROR'
}

const asId = (value: unknown): number | null => {
  const id = Number(value)
  return Number.isInteger(id) && id > 0 && id <= 2_147_483_647 ? id : null
}

/** The patient a call named: `patientId` in its path, else in its JSON body, else in its query. */
function patientIdOf(request: FastifyRequest): number | null {
  const candidates = [request.params, request.body, request.query] as (Record<string, unknown> | undefined)[]
  for (const source of candidates) {
    if (source && typeof source === 'object' && 'patientId' in source) return asId(source.patientId)
  }
  return null
}

/** Actions that change nothing (a FHIR search by POST included). */
const READ_ACTIONS: ReadonlySet<string> = new Set(['READ', 'LIST', 'SEARCH'])

/**
 * The status a route answers a change with: 201 when it documents that (a route that also answers
 * 200 does so when it changed nothing, as for a video room that already exists), else its lowest
 * documented 2xx.
 */
function changeStatusOf(request: FastifyRequest): number {
  const declared = request.routeOptions.config.changeStatus
  if (declared !== undefined) return declared
  const codes = Object.keys(request.routeOptions.schema?.response ?? {}).map(Number)
  const successes = codes.filter((code) => code >= 200 && code < 300)
  if (successes.includes(201)) return 201
  return successes.length > 0 ? Math.min(...successes) : 200
}

function resourceIdsOf(request: FastifyRequest): number[] {
  if (request.auditedIds) return request.auditedIds
  const id = asId((request.params as Record<string, unknown> | undefined)?.id)
  return id === null ? [] : [id]
}

/** Headers describing a representation that a withheld response no longer has. */
const REPRESENTATION_HEADERS = [
  'content-type',
  'content-length',
  'content-disposition',
  'content-range',
  'accept-ranges',
  'etag',
  'last-modified',
  'location',
]

/**
 * Every call of a route marked for audit in the access table leaves a record: who, which
 * organization, what, which records, the outcome and the request id. Only ids, never PHI.
 * A call is answered only once its record is committed (group commit, src/audit/audit-log.ts): a
 * success whose record cannot be written is answered 503 instead, so no data leaves and no change
 * is confirmed without its record. The record of a call that failed anyway is kept and retried.
 */
const audit: FastifyPluginAsync<{ flushIntervalMs: number }> = async (app, { flushIntervalMs }) => {
  const auditLog = new AuditLog(app.db, {
    flushIntervalMs,
    onFlushError: (error, pending) =>
      app.log.error({ err: { message: (error as Error).message }, pending }, 'audit write failed'),
  })
  app.decorate('auditLog', auditLog)
  app.decorateRequest('auditedIds', null)
  app.decorateRequest('auditedAs', null)
  app.decorateRequest('auditedPatientId', null)
  app.decorateRequest('auditedAlso', null)
  app.decorateRequest('changeAudit', null)
  app.decorateRequest('auditExpected', null)

  // A call that changes records serves inside a change audit: the services write its record in
  // the transaction (or statement) of the change (src/audit/change-audit.ts).
  app.addHook('preHandler', (request: FastifyRequest, _reply: FastifyReply, done: () => void) => {
    const rule = request.routeOptions.config.access?.audit
    if (!rule) return done()
    if (READ_ACTIONS.has(rule.action)) {
      request.auditExpected = auditLog.expect()
      return done()
    }
    const status = changeStatusOf(request)
    request.changeAudit = {
      fields: {
        occurred_at: new Date(),
        organization_id: request.principal?.organizationId ?? null,
        user_id: request.principal?.userId ?? null,
        action: rule.action,
        resource_type: rule.resourceType,
        patient_id: patientIdOf(request),
        outcome: outcomeOf(status),
        status_code: status,
        request_id: request.id,
      },
      writtenStatus: null,
    }
    serveWithChangeAudit(request.changeAudit, done)
  })

  /** Writes the call's record; rejects when a success's record could not be written. */
  async function recordCall(request: FastifyRequest, reply: FastifyReply, rule: AuditRule): Promise<void> {
    // Committed with the change, as this answer says.
    if (request.changeAudit?.writtenStatus === reply.statusCode) return
    const entry = (what: AuditRule, ids: number[], patientId: number | null): NewAuditRow => ({
      occurred_at: new Date(),
      organization_id: request.principal?.organizationId ?? null,
      user_id: request.principal?.userId ?? null,
      action: what.action,
      resource_type: what.resourceType,
      resource_ids: ids,
      patient_id: patientId,
      outcome: outcomeOf(reply.statusCode),
      status_code: reply.statusCode,
      request_id: request.id,
    })
    const patientId = patientIdOf(request) ?? request.auditedPatientId
    const rows = [entry(request.auditedAs ?? rule, resourceIdsOf(request), patientId)]
    for (const also of request.auditedAlso ?? []) rows.push(entry(also.rule, also.ids, null))
    if (reply.statusCode < 400) return auditLog.write(rows)
    // Failed anyway (the 503 below included): the answer stands whatever becomes of the record,
    // which is kept for a later try if this insert fails. It waits for its record like a success,
    // but for a 503: the database is then likely unreachable, and the insert would hold the answer
    // for as long again (shutdown still writes it: AuditLog.close).
    const kept = auditLog.write(rows, { keepOnFailure: true }).catch(() => {})
    if (reply.statusCode !== 503) await kept
  }

  // onSend rather than onResponse: the status is final here, and nothing has left yet. It calls
  // back rather than returns a promise: it runs on every response, and most routes are not audited.
  app.addHook('onSend', (request: FastifyRequest, reply: FastifyReply, payload: unknown, done) => {
    const rule = request.routeOptions.config.access?.audit
    if (!rule) return done(null, payload)
    const recorded = recordCall(request, reply, rule)
    // After recordCall has queued the records (synchronously), so the insert it waits for has them.
    request.auditExpected?.()
    recorded.then(
      () => done(null, payload),
      () => {
        for (const header of REPRESENTATION_HEADERS) reply.removeHeader(header)
        if (payload instanceof Readable) payload.destroy()
        // The route's error handler answers it, as an envelope or an OperationOutcome.
        done(new AppError('SYS_002', 'The audit trail could not record this call; nothing was disclosed'))
      },
    )
  })

  // However a read ends, the next insert stops waiting for it.
  app.addHook('onResponse', (request: FastifyRequest, _reply: FastifyReply, done: () => void) => {
    request.auditExpected?.()
    done()
  })

  // Registered here, after the database plugin, so it runs before the pool closes.
  app.addHook('onClose', async () => {
    await auditLog.close()
  })
}

export default fp(audit, { name: 'audit', dependencies: ['database'] })
