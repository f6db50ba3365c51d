import type { Db, Trx } from '../../../db/database.js'
import type { EncounterAddendumRow, NewEncounterAddendumRow } from '../../../db/tables/encounter-addenda.js'
import type { EncounterRow, EncounterRowUpdate, NewEncounterRow } from '../../../db/tables/encounters.js'
import type { ENCOUNTER_SORT_FIELDS, EncounterListQuery } from '../../../schemas/encounters.js'
import type { ListFilters } from '../../lib/paging.js'
import { rowList } from '../../lib/row-list.js'
import { changesRecord } from '../../lib/versions.js'

export type EncounterSortField = (typeof ENCOUNTER_SORT_FIELDS)[number]

export const ENCOUNTER_SORT_COLUMNS: Record<EncounterSortField, string> = {
  encounterDate: 'encounter_date',
  status: 'status',
  createdAt: 'created_at',
  updatedAt: 'updated_at',
}

const scoped = (db: Db, organizationId: number) =>
  db.selectFrom('encounters').where('organization_id', '=', organizationId)

export function findEncounter(db: Db, organizationId: number, id: number): Promise<EncounterRow | undefined> {
  return scoped(db, organizationId).selectAll().where('id', '=', id).executeTakeFirst()
}

export function lockEncounter(trx: Trx, organizationId: number, id: number) {
  return scoped(trx, organizationId).selectAll().where('id', '=', id).forUpdate().executeTakeFirst()
}

export function insertEncounter(trx: Trx, row: NewEncounterRow): Promise<EncounterRow> {
  return trx.insertInto('encounters').values(row).returningAll().executeTakeFirstOrThrow()
}

/** Changes the encounter if that changes something (changesRecord); the database raises its version and change time. */
export function updateEncounterRow(
  trx: Trx,
  organizationId: number,
  id: number,
  changes: EncounterRowUpdate,
): Promise<EncounterRow | undefined> {
  return trx
    .updateTable('encounters')
    .set(changes)
    .where('organization_id', '=', organizationId)
    .where('id', '=', id)
    .where(changesRecord(changes))
    .returningAll()
    .executeTakeFirst()
}

/**
 * Addenda of the given encounters, oldest first. Addenda have no organization column: they are
 * scoped by their encounter, which the caller found in its organization.
 */
export function addendaOf(
  db: Db,
  organizationId: number,
  encounterIds: number[],
): Promise<EncounterAddendumRow[]> {
  if (encounterIds.length === 0) return Promise.resolve([])
  return db
    .selectFrom('encounter_addenda')
    .selectAll()
    .where('organization_id', '=', organizationId)
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
  let query = scoped(db, organizationId).selectAll()
  if (filters.patientId) query = query.where('patient_id', '=', filters.patientId)
  if (filters.providerId) query = query.where('provider_id', '=', filters.providerId)
  if (filters.appointmentId) query = query.where('appointment_id', '=', filters.appointmentId)
  if (filters.status) query = query.where('status', '=', filters.status)
  if (filters.encounterType) query = query.where('encounter_type', '=', filters.encounterType)
  if (filters.dateFrom) query = query.where('encounter_date', '>=', filters.dateFrom)
  if (filters.dateTo) query = query.where('encounter_date', '<=', filters.dateTo)
  return rowList(db, query)
}
