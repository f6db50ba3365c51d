import { type Static, Type } from '@sinclair/typebox'
import { Envelope, Id, Named, Nullable, StringEnum, Timestamp } from './common.js'

export const CreateRoomBody = Named(
  'RoomCreate',
  Type.Object(
    {
      appointmentId: Type.Optional(
        Type.Integer({ minimum: 1, description: 'For an appointment (not cancelled)' }),
      ),
      providerId: Type.Optional(Type.Integer({ minimum: 1, description: 'Ad hoc: with patientId' })),
      patientId: Type.Optional(Type.Integer({ minimum: 1, description: 'Ad hoc: with providerId' })),
    },
    {
      additionalProperties: false,
      description:
        'Either `appointmentId`, or `providerId` and `patientId` for an ad hoc visit. Returns the existing room when there is one: the room of the appointment, or the open ad hoc room of the same provider and patient.',
      examples: [{ appointmentId: 128 }],
    },
  ),
)
export type CreateRoomBody = Static<typeof CreateRoomBody>

const ROOM_STATUSES = ['OPEN', 'CLOSED'] as const

export const Room = Named(
  'Room',
  Type.Object({
    id: Id,
    name: Type.String({ description: 'Random room name (never derived from ids)' }),
    appointmentId: Nullable(Id),
    providerId: Id,
    patientId: Id,
    status: StringEnum(ROOM_STATUSES),
    createdBy: Id,
    createdAt: Timestamp,
    closedAt: Nullable(Timestamp),
  }),
)
export type Room = Static<typeof Room>
export const RoomEnvelope = Envelope(Room)

export const JoinBody = Named(
  'RoomJoin',
  Type.Object(
    {
      roomName: Type.String({ pattern: '^ehr-[a-z0-9]{20,40}$' }),
      identity: Type.String({
        pattern: '^(provider|patient|staff)-[1-9][0-9]{0,9}$',
        description:
          'provider-<providerId> (the provider themself, or an ADMIN), patient-<patientId> (staff preparing the patient’s link), or staff-<your user id>',
      }),
      ttlSeconds: Type.Integer({
        minimum: 60,
        maximum: 14_400,
        default: 3600,
        description: 'Token lifetime, 60–14400 s',
      }),
    },
    {
      additionalProperties: false,
      examples: [{ roomName: 'ehr-k3v9q2m8x7c4b1n5z6w0', identity: 'patient-42', ttlSeconds: 3600 }],
    },
  ),
)
export type JoinBody = Static<typeof JoinBody>

export const JoinResult = Named(
  'RoomJoinResult',
  Type.Object({
    token: Type.String({ description: 'Jitsi JWT (HS256 with the Jitsi app secret)' }),
    roomName: Type.String(),
    identity: Type.String(),
    meetingUrl: Type.String({ description: 'https://{JITSI_DOMAIN}/{roomName}?jwt={token}' }),
    expiresIn: Type.Integer(),
  }),
)
export type JoinResult = Static<typeof JoinResult>
export const JoinEnvelope = Envelope(JoinResult)
