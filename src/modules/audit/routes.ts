import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { AuditEventListQuery, AuditEventPageEnvelope } from '../../../schemas/audit.js'
import { ok } from '../../http/envelope.js'
import { principalOf } from '../../http/principal.js'
import { listAuditEvents, syncAuditEvents } from './service.js'

const auditRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '',
    {
      schema: {
        tags: ['Audit'],
        operationId: 'listAuditEvents',
        summary: 'The organization’s audit trail, newest first',
        description:
          'One record per call of a route that touches patient data or webhooks: who, what, which records, the outcome and the request id; never names or clinical text. A call is answered only once its record is written, so it is listed as soon as its answer has arrived. With `updatedSince` or `cursor`, a sync page: records written at or after that time, oldest first, by (recordedAt, id); audit records never change, so `updatedSince` compares with `recordedAt`.',
        querystring: AuditEventListQuery,
        response: { 200: AuditEventPageEnvelope },
      },
    },
    async (request) => {
      const actor = principalOf(request)
      const sync = app.syncCursors.readOf(request, request.query)
      const page = sync
        ? app.syncCursors.pageOf(
            request,
            request.query,
            await syncAuditEvents(app.readDb(request), actor, request.query, sync),
          )
        : await listAuditEvents(app.readDb(request), actor, request.query)
      return ok('Audit events retrieved', page)
    },
  )
}

export default auditRoutes
