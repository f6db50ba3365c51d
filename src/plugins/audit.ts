import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { RouteAccess } from '../access/route-access.js'

type AuditRule = NonNullable<RouteAccess['audit']>

import { AuditLog } from '../audit/audit-log.js'

declare module 'fastify' {
  interface FastifyInstance {
    auditLog: AuditLog
  }
  interface FastifyRequest {
    /** Ids of the records a handler returned or changed, for the audit record. */
    auditedIds: number[] | null
    /** The rule the handler's records fall under when not the route's (a FHIR Observation that is a lab result). */
    auditedAs: AuditRule | null
    /** Records of other kinds the handler also returned (a FHIR `_include`), each under its route's rule. */
    auditedAlso: { rule: AuditRule; ids: number[] }[] | null
  }
  interface FastifyContextConfig {
    access?: RouteAccess
  }
}

function outcomeOf(statusCode: number): string {
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

function resourceIdsOf(request: FastifyRequest): number[] {
  if (request.auditedIds) return request.auditedIds
  const id = asId((request.params as Record<string, unknown> | undefined)?.id)
  return id === null ? [] : [id]
}

/**
 * Every call of a route marked for audit in the access table leaves a record: who, which
 * organization, what, which records, the outcome and the request id. Only ids, never PHI.
 */
const audit: FastifyPluginAsync<{ flushIntervalMs: number }> = async (app, { flushIntervalMs }) => {
  const auditLog = new AuditLog(app.db, {
    flushIntervalMs,
    onFlushError: (error, pending) =>
      app.log.error(
        { err: { message: (error as Error).message }, pending },
        'audit flush failed; will retry',
      ),
  })
  app.decorate('auditLog', auditLog)
  app.decorateRequest('auditedIds', null)
  app.decorateRequest('auditedAs', null)
  app.decorateRequest('auditedAlso', null)

  app.addHook('onResponse', (request: FastifyRequest, reply: FastifyReply, done: () => void) => {
    const routeRule = request.routeOptions.config.access?.audit
    if (routeRule) {
      const entry = (what: AuditRule, ids: number[], patientId: number | null) =>
        auditLog.record({
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
      entry(request.auditedAs ?? routeRule, resourceIdsOf(request), patientIdOf(request))
      for (const also of request.auditedAlso ?? []) entry(also.rule, also.ids, null)
    }
    done()
  })

  // Registered here, after the database plugin, so it runs before the pool closes.
  app.addHook('onClose', async () => {
    await auditLog.close()
  })
}

export default fp(audit, { name: 'audit', dependencies: ['database'] })
