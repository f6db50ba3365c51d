import type { Db, Trx } from '../../../db/database.js'
import type { EncounterAddendumRow, NewEncounterAddendumRow } from '../../../db/tables/encounter-addenda.js'
import type { ENCOUNTER_SORT_FIELDS, EncounterListQuery } from '../../../schemas/encounters.js'
import { inOrganization, organizationRecords } from '../../lib/organization-records.js'
import type { ListFilters, SortColumns } from '../../lib/paging.js'
import { rowList } from '../../lib/row-list.js'

export const ENCOUNTER_SORT_COLUMNS: SortColumns<typeof ENCOUNTER_SORT_FIELDS> = {
  encounterDate: 'encounter_date',
  status: 'status',
  createdAt: 'created_at',
  updatedAt: 'updated_at',
}

export const encounterRecords = organizationRecords('encounters')

/** Addenda of the given encounters, oldest first. */
export function addendaOf(
  db: Db,
  organizationId: number,
  encounterIds: number[],
): Promise<EncounterAddendumRow[]> {
  if (encounterIds.length === 0) return Promise.resolve([])
  return inOrganization(db, organizationId)
    .selectFrom('encounter_addenda')
    .selectAll()
    .where('encounter_id', 'in', encounterIds)
    .orderBy('id')
    .execute()
}

/** Scoped by the encounter, which the caller has locked in its organization. */
export async function insertAddendum(trx: Trx, row: NewEncounterAddendumRow): Promise<void> {
  await trx.insertInto('encounter_addenda').values(row).execute()
}

/** The organization's encounters matching the filters (none is ever removed, so sync pages have no tombstones). */
export function encounterRows(db: Db, organizationId: number, filters: ListFilters<EncounterListQuery>) {
  let query = inOrganization(db, organizationId).selectFrom('encounters').selectAll()
  if (filters.patientId) query = query.where('patient_id', '=', filters.patientId)
  if (filters.providerId) query = query.where('provider_id', '=', filters.providerId)
  if (filters.appointmentId) query = query.where('appointment_id', '=', filters.appointmentId)
  if (filters.status) query = query.where('status', '=', filters.status)
  if (filters.encounterType) query = query.where('encounter_type', '=', filters.encounterType)
  if (filters.dateFrom) query = query.where('encounter_date', '>=', filters.dateFrom)
  if (filters.dateTo) query = query.where('encounter_date', '<=', filters.dateTo)
  return rowList(db, query)
}
