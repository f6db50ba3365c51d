import type { Db } from '../../../db/database.js'
import type { AppointmentRow } from '../../../db/tables/appointments.js'
import {
  type APPOINTMENT_SORT_FIELDS,
  type AppointmentListQuery,
  TIME_RELEASING_STATUSES,
} from '../../../schemas/appointments.js'
import { inOrganization, organizationRecords } from '../../lib/organization-records.js'
import type { ListFilters, SortColumns } from '../../lib/paging.js'
import { rowList } from '../../lib/row-list.js'

export const APPOINTMENT_SORT_COLUMNS: SortColumns<typeof APPOINTMENT_SORT_FIELDS> = {
  appointmentDate: 'starts_at',
  status: 'status',
  createdAt: 'created_at',
  updatedAt: 'updated_at',
}

export const appointmentRecords = organizationRecords('appointments')

/** A provider's appointments that hold time overlapping [from, to). */
export function findBookedAppointments(
  db: Db,
  organizationId: number,
  providerId: number,
  from: Date,
  to: Date,
): Promise<AppointmentRow[]> {
  return inOrganization(db, organizationId)
    .selectFrom('appointments')
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
  let query = inOrganization(db, organizationId).selectFrom('appointments').selectAll()
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
