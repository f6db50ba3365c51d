import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { AuditEventListQuery, AuditEventPageEnvelope } from '../../../schemas/audit.js'
import { listOrSync } from '../../http/list-or-sync.js'
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
          'One record per call of a route that touches patient data or webhooks: who, what, which records, the outcome and the request id; never names or clinical text. A call is answered only once its record is written, so it is listed as soon as its answer has arrived. With `updatedSince` or `cursor`, a sync page: records written at or after that time, oldest first, by (recordedAt, id); audit records never change, so `updatedSince` compares with `recordedAt`.',
        querystring: AuditEventListQuery,
        response: { 200: AuditEventPageEnvelope },
      },
    },
    async (request) => listOrSync(request, 'Audit events retrieved', listAuditEvents, { auditIds: false }),
  )
}

export default auditRoutes
