import { isDeepStrictEqual } from 'node:util'
import type { Static, TObject } from '@sinclair/typebox'
import { sql } from 'kysely'
import { type Db, inTransaction } from '../../../db/database.js'
import { precompiledQuery } from '../../../db/precompiled-query.js'
import { prepared } from '../../../db/prepared-statements.js'
import type { ClinicalRecordRow } from '../../../db/tables/clinical-records.js'
import { type Chart, ENTERED_IN_ERROR } from '../../../schemas/clinical.js'
import type { PageQuery } from '../../../schemas/common.js'
import type { Actor } from '../../access/organization-scope.js'
import {
  type AuditColumns,
  auditChange,
  auditedChanges,
  type ChangeAudit,
  currentChangeAudit,
} from '../../audit/change-audit.js'
import { AppError, notFound } from '../../errors.js'
import { gatheredWrite } from '../../lib/gathered-writes.js'
import { patchRecord, projectOnto } from '../../lib/merge-patch.js'
import { sortOrder, splitListQuery } from '../../lib/paging.js'
import { type RecordList, type RowList, recordList } from '../../lib/row-list.js'
import { assertVersion, type ExpectedVersion } from '../../lib/versions.js'
import { checkEncounterOfPatient } from '../encounters/service.js'
import { isLivePatient, requirePatient } from '../patients/service.js'
import type { ClinicalKind } from './kind.js'
import { type ClinicalRecord, toRecord } from './mapper.js'
import {
  CLINICAL_SORT_COLUMNS,
  chartRecords,
  clinicalRows,
  findRecord,
  insertRecordsWhere,
  lockRecord,
  type NewRecordRow,
  type RecordColumns,
  type RecordFilters,
  type RecordScope,
  recordColumns,
  updateRecord,
  vitalSignMembers,
} from './queries.js'

// The kinds the FHIR API writes as Condition, AllergyIntolerance, MedicationStatement and Observation.
export type { ClinicalKind } from './kind.js'
export { allergies } from './kinds/allergies.js'
export { conditions } from './kinds/conditions.js'
export { labResults } from './kinds/lab-results.js'
export { medications } from './kinds/medications.js'
export { vitalSigns } from './kinds/vital-signs.js'

type KindIdentity = Pick<ClinicalKind, 'kind' | 'label' | 'uniqueness'>

const scopeOf = (kind: KindIdentity, actor: Actor, patientId: number): RecordScope => ({
  organizationId: actor.organizationId,
  patientId,
  kind: kind.kind,
})

const duplicate = ({ message }: NonNullable<ClinicalKind['uniqueness']>) => new AppError('RES_002', message)

/** A unique index of the kind (e.g. one ACTIVE allergy per substance) as a clear 409. */
function conflictOf(kind: KindIdentity, error: unknown): unknown {
  const { code, constraint } = (error ?? {}) as { code?: string; constraint?: string }
  if (code === '23505' && kind.uniqueness && constraint === kind.uniqueness.constraint) {
    return duplicate(kind.uniqueness)
  }
  return error
}

/** The encounter the input points at (checked to be the patient's), after the kind's own reference checks. */
async function checkReferences<I extends TObject, D extends TObject>(
  db: Db,
  kind: ClinicalKind<I, D>,
  actor: Actor,
  patientId: number,
  input: Static<I>,
): Promise<number | null> {
  await kind.checkReferences?.(db, actor.organizationId, input)
  const { encounterId } = input as { encounterId?: number | null }
  if (encounterId) await checkEncounterOfPatient(db, actor.organizationId, patientId, encounterId)
  return encounterId ?? null
}

const missing = (kind: KindIdentity, id: number) => notFound(`${kind.label} ${id} of this patient`)

const uncorrectable = (kind: KindIdentity) =>
  new AppError('RES_002', `The ${kind.label} was entered in error and can no longer be corrected`, {
    message: 'Record withdrawn',
  })

export const createRecord = async <I extends TObject, D extends TObject>(
  db: Db,
  kind: ClinicalKind<I, D>,
  actor: Actor,
  patientId: number,
  input: Static<I>,
): Promise<ClinicalRecord<D>> => toRecord<D>(await createRecordRow(db, kind, actor, patientId, input))

/** A new record to insert, and the audit record of the call creating it (none outside an audited call). */
interface NewRecord {
  row: NewRecordRow
  audit: ChangeAudit | undefined
}

// The patients' check, the inserts and the audit records of their calls in one statement, compiled
// once.
const insertRecordRows = precompiledQuery(
  (db, organizationId: number, columns: RecordColumns, audits: AuditColumns) => {
    const isLive = isLivePatient(db, organizationId, sql.ref('v.patient_id'))
    const statement = prepared(insertRecordsWhere(organizationId, isLive, columns, audits))
    return { compile: () => statement.compile(db) }
  },
)

/** Inserts new records of one organization in one statement: the row of each, undefined where none was. */
async function insertNewRecords(db: Db, records: readonly NewRecord[]) {
  const organizationId = (records[0] as NewRecord).row.organization_id
  if (records.some(({ row }) => row.organization_id !== organizationId)) {
    throw new Error('The new records of one statement are of one organization')
  }
  const rows = recordColumns(records.map(({ row }) => row))
  return auditedChanges(
    records.map(({ audit }) => audit),
    (audits) => insertRecordRows(db, organizationId, rows, audits),
  )
}

// A new record's statement takes those of the other new records gathered with it: a transaction
// Bundle's consecutive creates (src/modules/fhir/grouped-creates.ts).
const insertNewRecord = gatheredWrite(insertNewRecords)

/**
 * Runs checks of a new record that come before its insert, which checks the patient itself
 * (insertRecordsWhere): a failing one answers as if the patient had been checked first, 403 or 404
 * for another organization's or none.
 */
async function checkedBeforePatient<T>(db: Db, actor: Actor, patientId: number, checks: () => Promise<T>) {
  try {
    return await checks()
  } catch (error) {
    await requirePatient(db, actor, patientId)
    throw error
  }
}

/** createRecord, answering the row as stored. */
export async function createRecordRow<I extends TObject, D extends TObject>(
  db: Db,
  kind: ClinicalKind<I, D>,
  actor: Actor,
  patientId: number,
  input: Static<I>,
): Promise<ClinicalRecordRow> {
  const { encounterId, prepared } = await checkedBeforePatient(db, actor, patientId, async () => ({
    encounterId: await checkReferences(db, kind, actor, patientId, input),
    prepared: kind.prepare(input),
  }))
  const row: NewRecordRow = {
    organization_id: actor.organizationId,
    patient_id: patientId,
    encounter_id: encounterId,
    kind: kind.kind,
    status: prepared.status,
    code: prepared.code,
    effective_at: prepared.effectiveAt ?? new Date(),
    data: JSON.stringify(prepared.data),
    recorded_by: actor.userId,
    updated_by: actor.userId,
  }
  const inserted = await insertNewRecord(db, { row, audit: currentChangeAudit() })
  return inserted ?? notInserted(db, kind, actor, patientId)
}

/**
 * Why a new record was not inserted: its patient is not the caller's live patient (403 or 404), or
 * else it would have broken a unique index of its kind (409).
 */
async function notInserted(db: Db, kind: KindIdentity, actor: Actor, patientId: number): Promise<never> {
  await requirePatient(db, actor, patientId)
  if (!kind.uniqueness) throw new Error(`A new ${kind.label} of a live patient was not inserted`)
  throw duplicate(kind.uniqueness)
}

export async function getRecord<D extends TObject>(
  db: Db,
  kind: ClinicalKind<TObject, D>,
  actor: Actor,
  patientId: number,
  id: number,
): Promise<ClinicalRecord<D>> {
  await requirePatient(db, actor, patientId)
  const row = await findRecord(db, scopeOf(kind, actor, patientId), id)
  if (!row) throw missing(kind, id)
  return toRecord<D>(row)
}

type ClinicalListQuery = PageQuery & Record<string, unknown>

/** The list's filters from its query: the kind's status and code filters, the category, the time range. */
function filtersOf(
  kind: { statusField: string; codeFilter?: string },
  query: ClinicalListQuery,
): RecordFilters {
  return {
    status: query[kind.statusField] as string | undefined,
    code: kind.codeFilter ? (query[kind.codeFilter] as string | undefined) : undefined,
    category: query.category as string | undefined,
    from: query.from as string | undefined,
    to: query.to as string | undefined,
    includeEnteredInError: query.includeEnteredInError === true,
  }
}

/**
 * The patient's records of the kind a list query asks for. A sync page holds those entered in
 * error whatever the query says: a withdrawal is a change a copy must learn of.
 */
export async function listClinicalRecords<D extends TObject>(
  db: Db,
  kind: ClinicalKind<TObject, D>,
  actor: Actor,
  patientId: number,
  query: ClinicalListQuery,
): Promise<RecordList<ClinicalRecord<D>>> {
  await requirePatient(db, actor, patientId)
  const { paging } = splitListQuery(query)
  const sort = sortOrder(paging.sort, CLINICAL_SORT_COLUMNS, { field: 'effectiveAt', direction: 'desc' })
  const scope = scopeOf(kind, actor, patientId)
  const filters = filtersOf(kind, query)
  const rows: RowList<ClinicalRecordRow> = {
    page: (order, page) => clinicalRows(db, scope, filters).page(order, page),
    changes: (read) => clinicalRows(db, scope, { ...filters, includeEnteredInError: true }).changes(read),
  }
  return recordList(rows, paging, sort, (found) => found.map((row) => toRecord<D>(row)))
}

/** The input that would correct the record to what it is. */
const inputOfRecord = <I extends TObject, D extends TObject>(
  kind: ClinicalKind<I, D>,
  row: ClinicalRecordRow,
) => (kind.inputOf ? kind.inputOf(row) : projectOnto(kind.input, toRecord(row))) as Static<I>

/**
 * Whether a correction would store what a correction to the record as it is would: then it
 * changes nothing. Compared as prepared, since a correction marks some kinds (AMENDED, CORRECTED)
 * whatever it changes.
 */
function correctsNothing<I extends TObject, D extends TObject>(
  kind: ClinicalKind<I, D>,
  current: ClinicalRecordRow,
  prepared: ReturnType<ClinicalKind<I, D>['prepare']>,
  encounterId: number | null,
): boolean {
  if (encounterId !== current.encounter_id) return false
  try {
    return isDeepStrictEqual(prepared, kind.prepare(inputOfRecord(kind, current), current.data as Static<D>))
  } catch (error) {
    // The record as it is no longer passes the kind's checks: any valid correction changes it.
    if (error instanceof AppError) return false
    throw error
  }
}

/**
 * A correction replaces the kind's fields; the record keeps its id and its version goes up, unless
 * the correction changes nothing. With `expectedVersion`, only while the record is still at that
 * version (412 otherwise).
 */
export const correctRecord = async <I extends TObject, D extends TObject>(
  db: Db,
  kind: ClinicalKind<I, D>,
  actor: Actor,
  patientId: number,
  id: number,
  input: Static<I>,
  expectedVersion: ExpectedVersion,
): Promise<ClinicalRecord<D>> =>
  toRecord<D>(await correctRecordRow(db, kind, actor, patientId, id, input, expectedVersion))

/** correctRecord, answering the row as stored. */
export async function correctRecordRow<I extends TObject, D extends TObject>(
  db: Db,
  kind: ClinicalKind<I, D>,
  actor: Actor,
  patientId: number,
  id: number,
  input: Static<I>,
  expectedVersion: ExpectedVersion,
): Promise<ClinicalRecordRow> {
  await requirePatient(db, actor, patientId)
  const encounterId = await checkReferences(db, kind, actor, patientId, input)
  try {
    return await inTransaction(db, async (trx) => {
      const current = await lockRecord(trx, scopeOf(kind, actor, patientId), id)
      if (!current) throw missing(kind, id)
      assertVersion(current.version, expectedVersion)
      if (current.entered_in_error_at) throw uncorrectable(kind)
      const prepared = kind.prepare(input, current.data as Static<D>)
      if (correctsNothing(kind, current, prepared, encounterId)) return current
      const corrected = await updateRecord(trx, actor.organizationId, id, {
        status: prepared.status,
        code: prepared.code,
        effective_at: prepared.effectiveAt ?? current.recorded_at,
        data: prepared.data as Record<string, unknown>,
        encounter_id: encounterId,
        updated_by: actor.userId,
      })
      if (corrected) await auditChange(trx, [id])
      return corrected ?? current
    })
  } catch (error) {
    throw conflictOf(kind, error)
  }
}

/**
 * A JSON Merge Patch of a record, applied to the input that would correct it to what it is; the
 * merged input is then a correction like any other.
 */
export async function patchClinicalRecord<I extends TObject, D extends TObject>(
  db: Db,
  kind: ClinicalKind<I, D>,
  actor: Actor,
  patientId: number,
  id: number,
  patch: unknown,
  expectedVersion: ExpectedVersion,
  validate: (merged: unknown) => Static<I>,
): Promise<ClinicalRecord<D>> {
  return patchRecord({
    patch,
    expected: expectedVersion,
    read: async () => {
      await requirePatient(db, actor, patientId)
      const row = await findRecord(db, scopeOf(kind, actor, patientId), id)
      if (!row) throw missing(kind, id)
      // Checked before merging: a withdrawn record's status is one no correction may send (422).
      if (row.entered_in_error_at) throw uncorrectable(kind)
      return row
    },
    bodyOf: (row) => inputOfRecord(kind, row),
    validate,
    write: (input, version) => correctRecord(db, kind, actor, patientId, id, input, version),
  })
}

/** Withdraws a record: kept with who, when and why, and its status becomes ENTERED_IN_ERROR. */
export async function enterInError<D extends TObject>(
  db: Db,
  kind: ClinicalKind<TObject, D>,
  actor: Actor,
  patientId: number,
  id: number,
  reason: string,
  expectedVersion: ExpectedVersion,
): Promise<ClinicalRecord<D>> {
  await requirePatient(db, actor, patientId)
  const row = await inTransaction(db, async (trx) => {
    const current = await lockRecord(trx, scopeOf(kind, actor, patientId), id)
    if (!current) throw missing(kind, id)
    assertVersion(current.version, expectedVersion)
    if (current.entered_in_error_at) {
      throw new AppError('RES_002', `The ${kind.label} is already entered in error`, {
        message: 'Record withdrawn',
      })
    }
    const withdrawn = await updateRecord(trx, actor.organizationId, id, {
      status: ENTERED_IN_ERROR,
      data: { ...current.data, [kind.statusField]: ENTERED_IN_ERROR },
      updated_by: actor.userId,
      entered_in_error_at: new Date(),
      entered_in_error_by: actor.userId,
      entered_in_error_reason: reason,
    })
    if (withdrawn) await auditChange(trx, [id])
    return withdrawn ?? current
  })
  return toRecord<D>(row)
}

export async function getChart(db: Db, actor: Actor, patientId: number): Promise<Chart> {
  await requirePatient(db, actor, patientId)
  const rows = await chartRecords(db, actor.organizationId, patientId)
  const of = (kind: ClinicalRecordRow['kind']) =>
    rows.filter((row) => row.kind === kind).map((row) => toRecord(row))
  return {
    patientId,
    latestVitals: (of('VITAL_SIGNS')[0] as Chart['latestVitals']) ?? null,
    activeConditions: of('CONDITION') as Chart['activeConditions'],
    activeAllergies: of('ALLERGY') as Chart['activeAllergies'],
    activeMedications: of('MEDICATION') as Chart['activeMedications'],
    recentLabResults: of('LAB_RESULT') as Chart['recentLabResults'],
  }
}

/** The measurements a vital-signs record holds now, each a record of its own (migration 0035). */
export const measurementsOf = (db: Db, actor: Actor, panelId: number) =>
  vitalSignMembers(db, actor.organizationId, panelId)
