import { randomInt } from 'node:crypto'
import type { Db } from '../../../db/database.js'
import type { TelehealthRoomRow } from '../../../db/tables/telehealth-rooms.js'
import type { CreateRoomBody, JoinBody, JoinResult, Room } from '../../../schemas/telehealth.js'
import { type Actor, missingRecord, ownerOrganization } from '../../access/organization-scope.js'
import { hasAnyRole } from '../../access/roles.js'
import { withChangeAudit } from '../../audit/change-audit.js'
import { AppError, conflict, forbidden, invalidFields, notFound } from '../../errors.js'
import type { Principal } from '../../identity/principal.js'
import { requireAppointment } from '../appointments/service.js'
import { findPatientOfOrganization, requirePatient } from '../patients/service.js'
import { findProviderOfOrganization, requireProvider } from '../providers/service.js'
import { type JitsiParticipant, type JitsiSettings, jitsiToken, meetingUrl } from './jitsi.js'
import { toRoom } from './mapper.js'
import {
  closeRoom as closeRoomRow,
  findOpenAdHocRoom,
  findRoom,
  findRoomByName,
  findRoomOfAppointment,
  insertRoom,
  roomNameExists,
} from './queries.js'

const ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789'
// 24 characters of 36: about 124 random bits. The name is all a Jitsi room has; it must not be guessable.
const roomName = () =>
  `ehr-${Array.from({ length: 24 }, () => ALPHABET[randomInt(ALPHABET.length)]).join('')}`

export interface RoomOutcome {
  room: Room
  created: boolean
}

/** The room of an appointment or of an ad hoc visit: the existing one if there is one, else a new one. */
export async function openRoom(db: Db, actor: Actor, body: CreateRoomBody): Promise<RoomOutcome> {
  let existing: () => Promise<TelehealthRoomRow | undefined>
  let party: { appointment_id: number | null; provider_id: number; patient_id: number }
  if (body.appointmentId !== undefined && body.providerId === undefined && body.patientId === undefined) {
    const appointment = await requireAppointment(db, actor, body.appointmentId)
    if (appointment.status === 'CANCELLED') throw conflict('The appointment is cancelled')
    party = {
      appointment_id: appointment.id,
      provider_id: appointment.provider_id,
      patient_id: appointment.patient_id,
    }
    existing = () => findRoomOfAppointment(db, actor.organizationId, appointment.id)
  } else if (
    body.appointmentId === undefined &&
    body.providerId !== undefined &&
    body.patientId !== undefined
  ) {
    const { providerId, patientId } = body
    await requireProvider(db, actor, providerId)
    await requirePatient(db, actor, patientId)
    party = { appointment_id: null, provider_id: providerId, patient_id: patientId }
    existing = () => findOpenAdHocRoom(db, actor.organizationId, providerId, patientId)
  } else {
    throw invalidFields(
      [{ path: 'appointmentId', message: 'is required, unless providerId and patientId are sent' }],
      'Send appointmentId, or providerId and patientId',
      'VAL_002',
    )
  }
  const found = await existing()
  if (found) return { room: toRoom(found), created: false }
  const inserted = await withChangeAudit(db, (db) =>
    insertRoom(db, {
      organization_id: actor.organizationId,
      name: roomName(),
      ...party,
      status: 'OPEN',
      created_by: actor.userId,
      closed_at: null,
      closed_by: null,
    }),
  )
  if (inserted) return { room: toRoom(inserted), created: true }
  // A concurrent request created it first.
  const raced = await existing()
  if (!raced) throw new AppError('SYS_001', 'The room could not be created')
  return { room: toRoom(raced), created: false }
}

export async function getRoom(db: Db, actor: Actor, id: number): Promise<Room> {
  const row = await findRoom(db, actor.organizationId, id)
  return toRoom(row ?? missingRecord('Room', id, await ownerOrganization(db, 'telehealth_rooms', id), actor))
}

export async function closeRoom(db: Db, actor: Actor, id: number): Promise<Room> {
  const row = await withChangeAudit(db, (db) => closeRoomRow(db, actor.organizationId, id, actor.userId))
  return toRoom(row ?? missingRecord('Room', id, await ownerOrganization(db, 'telehealth_rooms', id), actor))
}

const notAParty = () => forbidden('The identity is not a party of this room, or not one you may act for')

/**
 * Who joins: `provider-N` (that provider's own user account, or an ADMIN), `patient-N` (staff
 * preparing the patient's link) or `staff-N` (yourself). Providers and staff moderate; patients do not.
 */
async function participantFor(
  db: Db,
  principal: Principal,
  room: { provider_id: number; patient_id: number },
  identity: string,
): Promise<JitsiParticipant> {
  const [kind, rawId] = identity.split('-') as [string, string]
  const id = Number(rawId)
  if (kind === 'staff') {
    if (id !== principal.userId) throw notAParty()
    return {
      id: identity,
      name: `${principal.firstName} ${principal.lastName}`,
      email: principal.email,
      moderator: true,
    }
  }
  if (kind === 'provider') {
    const provider =
      id === room.provider_id ? await findProviderOfOrganization(db, principal.organizationId, id) : undefined
    if (
      !provider ||
      (provider.user_id !== principal.userId && !hasAnyRole(principal.authorities, ['ADMIN']))
    ) {
      throw notAParty()
    }
    return {
      id: identity,
      name: `${provider.first_name} ${provider.last_name}`,
      email: provider.email,
      moderator: true,
    }
  }
  const patient =
    id === room.patient_id ? await findPatientOfOrganization(db, principal.organizationId, id) : undefined
  if (!patient) throw notAParty()
  // Only a display name goes to the video service: no e-mail or other patient data.
  return { id: identity, name: `${patient.first_name} ${patient.last_name}`, email: null, moderator: false }
}

export async function joinRoom(
  db: Db,
  principal: Principal,
  body: JoinBody,
  settings: JitsiSettings | undefined,
): Promise<JoinResult> {
  if (!settings) {
    throw new AppError(
      'SYS_001',
      'Telehealth is not configured: set JITSI_DOMAIN, JITSI_APP_ID and JITSI_APP_SECRET',
      {
        status: 503,
        message: 'Telehealth unavailable',
      },
    )
  }
  const room = await findRoomByName(db, principal.organizationId, body.roomName)
  if (!room) {
    if (await roomNameExists(db, body.roomName)) throw forbidden('The room belongs to another organization')
    throw notFound(`Room ${body.roomName}`)
  }
  if (room.status !== 'OPEN') throw conflict('The room is closed')
  if (room.appointment_status === 'CANCELLED') throw conflict('The appointment of this room is cancelled')
  const participant = await participantFor(db, principal, room, body.identity)
  const token = await jitsiToken(settings, body.roomName, participant, body.ttlSeconds)
  return {
    token,
    roomName: body.roomName,
    identity: body.identity,
    meetingUrl: meetingUrl(settings, body.roomName, token),
    expiresIn: body.ttlSeconds,
  }
}
