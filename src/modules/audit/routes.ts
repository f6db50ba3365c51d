import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { AuditEventListQuery, AuditEventPageEnvelope } from '../../../schemas/audit.js'
import { ok } from '../../http/envelope.js'
import { principalOf } from '../../http/principal.js'
import { listAuditEvents } from './service.js'

const auditRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '',
    {
      schema: {
        tags: ['Audit'],
        operationId: 'listAuditEvents',
        summary: 'The organization’s audit trail, newest first',
        description:
          'One record per call of a route that touches patient data or webhooks: who, what, which records, the outcome and the request id; never names or clinical text. Records are written in batches, so a call appears within about `AUDIT_FLUSH_INTERVAL_MS`.',
        querystring: AuditEventListQuery,
        response: { 200: AuditEventPageEnvelope },
      },
    },
    async (request) =>
      ok('Audit events retrieved', await listAuditEvents(app.db, principalOf(request), request.query)),
  )
}

export default auditRoutes
