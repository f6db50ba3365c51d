import type { TelehealthRoomRow } from '../../../db/tables/telehealth-rooms.js'
import type { Room } from '../../../schemas/telehealth.js'

export function toRoom(row: TelehealthRoomRow): Room {
  return {
    id: row.id,
    name: row.name,
    appointmentId: row.appointment_id,
    providerId: row.provider_id,
    patientId: row.patient_id,
    status: row.status as Room['status'],
    createdBy: row.created_by,
    createdAt: row.created_at.toISOString(),
    closedAt: row.closed_at?.toISOString() ?? null,
  }
}
