import { type Insertable, sql } from 'kysely'
import { acrossOrganizations } from '../../../db/across-organizations.js'
import type { Db } from '../../../db/database.js'
import type { TelehealthRoomsTable } from '../../../db/tables/telehealth-rooms.js'
import { inOrganization } from '../../lib/organization-records.js'

const rooms = (db: Db, organizationId: number) =>
  inOrganization(db, organizationId).selectFrom('telehealth_rooms').selectAll()

export const findRoom = (db: Db, organizationId: number, id: number) =>
  rooms(db, organizationId).where('id', '=', id).executeTakeFirst()

export const findRoomOfAppointment = (db: Db, organizationId: number, appointmentId: number) =>
  rooms(db, organizationId).where('appointment_id', '=', appointmentId).executeTakeFirst()

export const findOpenAdHocRoom = (db: Db, organizationId: number, providerId: number, patientId: number) =>
  rooms(db, organizationId)
    .where('appointment_id', 'is', null)
    .where('status', '=', 'OPEN')
    .where('provider_id', '=', providerId)
    .where('patient_id', '=', patientId)
    .executeTakeFirst()

/** Inserts unless an equivalent room appeared meanwhile (a concurrent request): then undefined. */
export function insertRoom(db: Db, room: Insertable<TelehealthRoomsTable>) {
  return db
    .insertInto('telehealth_rooms')
    .values(room)
    .onConflict((conflict) => conflict.doNothing())
    .returningAll()
    .executeTakeFirst()
}

/** The organization's room of that name, with what joining it depends on. */
export function findRoomByName(db: Db, organizationId: number, name: string) {
  return db
    .selectFrom('telehealth_rooms')
    .leftJoin('appointments', (join) =>
      join
        .onRef('appointments.id', '=', 'telehealth_rooms.appointment_id')
        .onRef('appointments.organization_id', '=', 'telehealth_rooms.organization_id'),
    )
    .select([
      'telehealth_rooms.id',
      'telehealth_rooms.organization_id',
      'telehealth_rooms.status',
      'telehealth_rooms.provider_id',
      'telehealth_rooms.patient_id',
      'appointments.status as appointment_status',
    ])
    .where('telehealth_rooms.organization_id', '=', organizationId)
    .where('telehealth_rooms.name', '=', name)
    .executeTakeFirst()
}

/** Whether a room of that name exists in any organization: tells 403 from 404, and returns nothing else. */
export async function roomNameExists(db: Db, name: string): Promise<boolean> {
  const row = await db
    .selectFrom('telehealth_rooms')
    .select('id')
    .where('name', '=', name)
    .limit(1)
    .modifyEnd(acrossOrganizations('owner probe'))
    .executeTakeFirst()
  return row !== undefined
}

export function closeRoom(db: Db, organizationId: number, id: number, userId: number) {
  return inOrganization(db, organizationId)
    .updateTable('telehealth_rooms')
    .set({
      status: 'CLOSED',
      closed_at: sql`coalesce(closed_at, now())`,
      closed_by: userId,
      updated_at: sql`now()`,
    })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirst()
}
