import { type RawBuilder, sql } from 'kysely'
import { integerArrayLiteral, textArrayLiteral } from '../../../db/array-literal.js'
import type { Db, Trx } from '../../../db/database.js'
import type { ClinicalKindName, ClinicalRecordRow } from '../../../db/tables/clinical-records.js'
import { type AuditColumns, changesAuditCte } from '../../audit/change-audit.js'
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
  member_ids: true,
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
  | 'member_ids'
  | 'data'
> & { data: string }

/** New records' columns, each as one PostgreSQL array literal (db/array-literal.ts), in the records' order. */
export function recordColumns(rows: readonly NewRecordRow[]) {
  const integers = (value: (row: NewRecordRow) => number | null) => integerArrayLiteral(rows.map(value))
  const texts = (value: (row: NewRecordRow) => string | null) => textArrayLiteral(rows.map(value))
  return {
    patientId: integers((row) => row.patient_id),
    encounterId: integers((row) => row.encounter_id),
    kind: texts((row) => row.kind),
    status: texts((row) => row.status),
    code: texts((row) => row.code),
    effectiveAt: texts((row) => row.effective_at.toISOString()),
    data: texts((row) => row.data),
    recordedBy: integers((row) => row.recorded_by),
    updatedBy: integers((row) => row.updated_by),
  }
}

export type RecordColumns = ReturnType<typeof recordColumns>

/**
 * The INSERT of new records of the organization with the audit record of each (changesAuditCte),
 * in one statement. A record is inserted only where `isLive` holds of its patient (`v.patient_id`),
 * and not where it would break a unique index of its kind (one active allergy per substance): the
 * caller tells why. Each takes its id before the insert, so that its audit record and its place
 * among the records (`n`, from 1, which the statement answers with it) follow it. Each value is
 * cast: the statement is prepared, and its parameters' types must not depend on their first values.
 */
export function insertRecordsWhere(
  organizationId: number,
  isLive: RawBuilder<boolean>,
  columns: RecordColumns,
  audits: AuditColumns,
) {
  return sql<ClinicalRecordRow & { n: number }>`
    with new_rows as (
      select nextval(pg_get_serial_sequence('clinical_records', 'id'))::integer as id, v.*
      from unnest(${columns.patientId}::integer[], ${columns.encounterId}::integer[], ${columns.kind}::text[],
        ${columns.status}::text[], ${columns.code}::text[], ${columns.effectiveAt}::timestamptz[],
        ${columns.data}::jsonb[], ${columns.recordedBy}::integer[], ${columns.updatedBy}::integer[]
      ) with ordinality as v(patient_id, encounter_id, kind, status, code, effective_at, data, recorded_by,
        updated_by, n)
      where ${isLive}
    ), changed as (
      insert into clinical_records (id, organization_id, patient_id, encounter_id, kind, status, code,
        effective_at, data, recorded_by, updated_by)
      overriding system value
      select id, ${organizationId}::integer, patient_id, encounter_id, kind, status, code, effective_at, data,
        recorded_by, updated_by
      from new_rows order by n
      on conflict do nothing
      returning ${RETURNED}
    ), numbered as (
      select changed.id, new_rows.n from changed join new_rows using (id)
    ), ${changesAuditCte(audits)}
    select numbered.n::integer as n, changed.* from changed join numbered using (id) order by numbered.n`
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

/** The measurements (VITAL_SIGN records, migration 0035) a vital-signs record holds now. */
export function vitalSignMembers(db: Db, organizationId: number, panelId: number) {
  return inOrganization(db, organizationId)
    .selectFrom('clinical_records')
    .selectAll()
    .where('kind', '=', 'VITAL_SIGN')
    .where(
      'id',
      'in',
      sql<number>`(select value::integer from clinical_records as panel, jsonb_each_text(panel.member_ids)
        where panel.id = ${panelId} and panel.organization_id = ${organizationId})`,
    )
    .execute()
}
