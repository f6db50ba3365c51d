import { type RawBuilder, sql } from 'kysely'
import type { Db, Trx } from '../../../db/database.js'
import type { ClinicalKindName, ClinicalRecordRow } from '../../../db/tables/clinical-records.js'
import { inOrganization, organizationRecords } from '../../lib/organization-records.js'
import { rowList } from '../../lib/row-list.js'

export const CLINICAL_SORT_COLUMNS = { effectiveAt: 'effective_at', recordedAt: 'recorded_at' }

export interface RecordScope {
  organizationId: number
  patientId: number
  kind: ClinicalKindName
}

const clinicalRecords = organizationRecords('clinical_records')

const scoped = (db: Db, scope: RecordScope) =>
  inOrganization(db, scope.organizationId)
    .selectFrom('clinical_records')
    .where('patient_id', '=', scope.patientId)
    .where('kind', '=', scope.kind)

// Every column by name, since a prepared statement's result must not change with the table.
const COLUMNS: Record<keyof ClinicalRecordRow, true> = {
  id: true,
  organization_id: true,
  patient_id: true,
  encounter_id: true,
  kind: true,
  status: true,
  code: true,
  effective_at: true,
  data: true,
  version: true,
  recorded_by: true,
  recorded_at: true,
  updated_by: true,
  created_at: true,
  updated_at: true,
  entered_in_error_at: true,
  entered_in_error_by: true,
  entered_in_error_reason: true,
}
const RETURNED = sql.join(Object.keys(COLUMNS).map((column) => sql.ref(column)))

/** A new record's row, its data as JSON text. */
export type NewRecordRow = Omit<
  ClinicalRecordRow,
  | 'id'
  | 'version'
  | 'recorded_at'
  | 'created_at'
  | 'updated_at'
  | 'entered_in_error_at'
  | 'entered_in_error_by'
  | 'entered_in_error_reason'
  | 'data'
> & { data: string }

/**
 * The INSERT of a new record, made only where `condition` holds (the patient is live): no row
 * otherwise. Each value is cast, since a SELECT list gives its parameters no type of their own.
 */
export function insertRecordWhere(row: NewRecordRow, condition: RawBuilder<boolean>) {
  return sql<ClinicalRecordRow>`insert into clinical_records (organization_id, patient_id, encounter_id, kind,
      status, code, effective_at, data, recorded_by, updated_by)
    select ${row.organization_id}::integer, ${row.patient_id}::integer, ${row.encounter_id}::integer,
      ${row.kind}::text, ${row.status}::text, ${row.code}::text, ${row.effective_at}::timestamptz,
      ${row.data}::jsonb, ${row.recorded_by}::integer, ${row.updated_by}::integer
    where ${condition}
    returning ${RETURNED}`
}

export function findRecord(db: Db, scope: RecordScope, id: number) {
  return scoped(db, scope).selectAll().where('id', '=', id).executeTakeFirst()
}

export function lockRecord(trx: Trx, scope: RecordScope, id: number) {
  return scoped(trx, scope).selectAll().where('id', '=', id).forUpdate().executeTakeFirst()
}

/** Changes a record if that changes something, and returns it (organizationRecords' update). */
export function updateRecord(
  trx: Trx,
  organizationId: number,
  id: number,
  changes: Partial<Pick<ClinicalRecordRow, 'status' | 'code' | 'effective_at' | 'data' | 'encounter_id'>> & {
    updated_by: number
    entered_in_error_at?: Date
    entered_in_error_by?: number
    entered_in_error_reason?: string
  },
) {
  const { data, ...rest } = changes
  return clinicalRecords.update(trx, organizationId, id, {
    ...rest,
    ...(data ? { data: JSON.stringify(data) } : {}),
  })
}

export interface RecordFilters {
  status?: string
  code?: string
  from?: string
  to?: string
  includeEnteredInError?: boolean
  category?: string
}

/** The patient's records of the kind matching the filters (withdrawn ones are marked, never removed). */
export function clinicalRows(db: Db, scope: RecordScope, filters: RecordFilters) {
  let query = scoped(db, scope).selectAll()
  if (!filters.includeEnteredInError) query = query.where('entered_in_error_at', 'is', null)
  if (filters.status) query = query.where('status', '=', filters.status)
  if (filters.code) query = query.where('code', '=', filters.code)
  if (filters.category) query = query.where(sql`data->>'category'`, '=', filters.category)
  if (filters.from) query = query.where('effective_at', '>=', new Date(filters.from))
  if (filters.to) query = query.where('effective_at', '<', new Date(filters.to))
  return rowList(db, query)
}

const RECENT_LAB_RESULTS = 10

/**
 * Everything the chart summary shows, in one query: the latest vital signs, the 10 latest lab
 * results, and the active conditions, allergies and medications.
 */
export function chartRecords(db: Db, organizationId: number, patientId: number) {
  return db
    .selectFrom(() =>
      inOrganization(db, organizationId)
        .selectFrom('clinical_records')
        .selectAll()
        .select(
          sql<number>`row_number() over (partition by kind order by effective_at desc, id desc)`.as(
            'recency',
          ),
        )
        .where('patient_id', '=', patientId)
        .where('entered_in_error_at', 'is', null)
        .as('ranked'),
    )
    .selectAll()
    .where((eb) =>
      eb.or([
        eb.and([eb('kind', '=', 'VITAL_SIGNS'), eb('recency', '=', 1)]),
        eb.and([eb('kind', '=', 'LAB_RESULT'), eb('recency', '<=', RECENT_LAB_RESULTS)]),
        eb.and([eb('kind', 'in', ['CONDITION', 'ALLERGY', 'MEDICATION']), eb('status', '=', 'ACTIVE')]),
      ]),
    )
    .orderBy('effective_at', 'desc')
    .orderBy('id', 'desc')
    .execute()
}
