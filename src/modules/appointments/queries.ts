import type { Db, Trx } from '../../../db/database.js'
import type {
  AppointmentRow,
  AppointmentRowUpdate,
  NewAppointmentRow,
} from '../../../db/tables/appointments.js'
import {
  type APPOINTMENT_SORT_FIELDS,
  type AppointmentListQuery,
  TIME_RELEASING_STATUSES,
} from '../../../schemas/appointments.js'
import type { ListFilters } from '../../lib/paging.js'
import { rowList } from '../../lib/row-list.js'
import { changesRecord } from '../../lib/versions.js'

export type AppointmentSortField = (typeof APPOINTMENT_SORT_FIELDS)[number]

export const APPOINTMENT_SORT_COLUMNS: Record<AppointmentSortField, string> = {
  appointmentDate: 'starts_at',
  status: 'status',
  createdAt: 'created_at',
  updatedAt: 'updated_at',
}

const scoped = (db: Db, organizationId: number) =>
  db.selectFrom('appointments').where('organization_id', '=', organizationId)

export function findAppointment(
  db: Db,
  organizationId: number,
  id: number,
): Promise<AppointmentRow | undefined> {
  return scoped(db, organizationId).selectAll().where('id', '=', id).executeTakeFirst()
}

export function lockAppointment(trx: Trx, organizationId: number, id: number) {
  return scoped(trx, organizationId).selectAll().where('id', '=', id).forUpdate().executeTakeFirst()
}

export function insertAppointment(trx: Trx, row: NewAppointmentRow): Promise<AppointmentRow> {
  return trx.insertInto('appointments').values(row).returningAll().executeTakeFirstOrThrow()
}

/** Changes the appointment if that changes something (changesRecord); the database raises its version and change time. */
export function updateAppointmentRow(
  trx: Trx,
  organizationId: number,
  id: number,
  changes: AppointmentRowUpdate,
): Promise<AppointmentRow | undefined> {
  return trx
    .updateTable('appointments')
    .set(changes)
    .where('organization_id', '=', organizationId)
    .where('id', '=', id)
    .where(changesRecord(changes))
    .returningAll()
    .executeTakeFirst()
}

/** A provider's appointments that hold time overlapping [from, to). */
export function findBookedAppointments(
  db: Db,
  organizationId: number,
  providerId: number,
  from: Date,
  to: Date,
): Promise<AppointmentRow[]> {
  return scoped(db, organizationId)
    .selectAll()
    .where('provider_id', '=', providerId)
    .where('status', 'not in', TIME_RELEASING_STATUSES)
    .where('starts_at', '<', to)
    .where('ends_at', '>', from)
    .orderBy('starts_at')
    .execute()
}

/** The organization's appointments matching the filters (none is ever removed, so sync pages have no tombstones). */
export function appointmentRows(db: Db, organizationId: number, filters: ListFilters<AppointmentListQuery>) {
  let query = scoped(db, organizationId).selectAll()
  if (filters.patientId) query = query.where('patient_id', '=', filters.patientId)
  if (filters.providerId) query = query.where('provider_id', '=', filters.providerId)
  if (filters.status) query = query.where('status', '=', filters.status)
  if (filters.appointmentType) query = query.where('appointment_type', '=', filters.appointmentType)
  if (filters.priority) query = query.where('priority', '=', filters.priority)
  if (filters.appointmentDate) query = query.where('appointment_date', '=', filters.appointmentDate)
  if (filters.dateFrom) query = query.where('appointment_date', '>=', filters.dateFrom)
  if (filters.dateTo) query = query.where('appointment_date', '<=', filters.dateTo)
  return rowList(db, query)
}
