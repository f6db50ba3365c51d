import type { Db, Trx } from '../../../db/database.js'
import type { EncounterAddendumRow, NewEncounterAddendumRow } from '../../../db/tables/encounter-addenda.js'
import type { EncounterRow } from '../../../db/tables/encounters.js'
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

/**
 * The diagnoses of a note just signed, each as a clinical record of its own (FHIR Conditions of
 * category encounter-diagnosis), recorded by the signer when it was signed. Scoped by the
 * encounter, which the caller has locked in its organization.
 */
export async function insertDiagnosisRecords(trx: Trx, signed: EncounterRow): Promise<void> {
  const { signed_by: signer, signed_at: signedAt } = signed
  if (signed.diagnoses.length === 0 || signer === null || signedAt === null) return
  await trx
    .insertInto('clinical_records')
    .values(
      signed.diagnoses.map((diagnosis) => ({
        organization_id: signed.organization_id,
        patient_id: signed.patient_id,
        encounter_id: signed.id,
        kind: 'ENCOUNTER_DIAGNOSIS' as const,
        status: 'RECORDED',
        code: diagnosis.icd10Code,
        effective_at: new Date(`${signed.encounter_date}T00:00:00Z`),
        data: JSON.stringify({ icd10Code: diagnosis.icd10Code, description: diagnosis.description }),
        recorded_by: signer,
        recorded_at: signedAt,
        updated_by: signer,
      })),
    )
    .execute()
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
