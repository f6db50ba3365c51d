import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { IdParams } from '../../../schemas/common.js'
import { CreateRoomBody, JoinBody, JoinEnvelope, RoomEnvelope } from '../../../schemas/telehealth.js'
import { ok } from '../../http/envelope.js'
import { principalOf } from '../../http/request-principal.js'
import { errorResponse, noSuch, otherOrganization } from '../../http/responses.js'
import type { JitsiSettings } from './jitsi.js'
import { closeRoom, getRoom, joinRoom, openRoom } from './service.js'

const tags = ['Telehealth']
const forbidden = otherOrganization('record', 'RecordForbidden')
const roomErrors = { 403: forbidden, 404: noSuch('room', 'RoomNotFound') }

const telehealthRoutes: FastifyPluginAsyncTypebox<{ jitsi: JitsiSettings | undefined }> = async (
  app,
  { jitsi },
) => {
  app.post(
    '/rooms',
    {
      schema: {
        tags,
        operationId: 'openTelehealthRoom',
        summary: 'Create (or return the existing) video room',
        body: CreateRoomBody,
        response: {
          200: RoomEnvelope,
          201: RoomEnvelope,
          403: forbidden,
          404: noSuch('appointment, provider or patient'),
          409: errorResponse(409, 'The appointment is cancelled (RES_002)'),
        },
      },
    },
    async (request, reply) => {
      const { room, created } = await openRoom(app.db, principalOf(request), request.body)
      request.auditedIds = [room.id]
      return reply.code(created ? 201 : 200).send(ok(created ? 'Room created' : 'Room exists', room))
    },
  )

  app.get(
    '/rooms/:id',
    {
      schema: {
        tags,
        operationId: 'getTelehealthRoom',
        summary: 'One video room',
        params: IdParams,
        response: {
          200: RoomEnvelope,
          ...roomErrors,
        },
      },
    },
    async (request) => ok('Room retrieved', await getRoom(app.db, principalOf(request), request.params.id)),
  )

  app.post(
    '/rooms/:id/close',
    {
      schema: {
        tags,
        operationId: 'closeTelehealthRoom',
        summary: 'Close a video room; it can no longer be joined',
        params: IdParams,
        response: {
          200: RoomEnvelope,
          ...roomErrors,
        },
      },
    },
    async (request) => ok('Room closed', await closeRoom(app.db, principalOf(request), request.params.id)),
  )

  app.post(
    '/jitsi/join',
    {
      schema: {
        tags,
        operationId: 'joinTelehealthRoom',
        summary: 'A Jitsi token and meeting link for a participant',
        description:
          'An unknown room is 404 (patient apps poll until it exists); a closed room or one whose appointment is cancelled is 409; without the Jitsi settings the answer is 503.',
        body: JoinBody,
        response: {
          200: JoinEnvelope,
          403: errorResponse(
            403,
            'Another organization’s room, or an identity you may not act for (AUTH_003)',
          ),
          404: roomErrors[404],
          409: errorResponse(409, 'The room is closed or its appointment cancelled (RES_002)'),
          503: errorResponse(
            503,
            'Telehealth is not configured, or the database is unavailable (SYS_001, SYS_002)',
          ),
        },
      },
    },
    async (request) =>
      ok('Join link issued', await joinRoom(app.db, principalOf(request), request.body, jitsi)),
  )
}

export default telehealthRoutes
