import { type Expression, sql } from 'kysely'
import type { Db } from '../../../db/database.js'
import type { NewPatientRow, PatientRow, PatientRowUpdate } from '../../../db/tables/patients.js'
import type { PageOf, PageQuery } from '../../../schemas/common.js'
import {
  type CreatePatientBody,
  type PatchPatientBody,
  type Patient,
  type PatientListQuery,
  type PatientSearchQuery,
  UpdatePatientBody,
} from '../../../schemas/patients.js'
import { type Actor, missingRecord, ownerOrganization } from '../../access/organization-scope.js'
import { currentChangeAudit } from '../../audit/change-audit.js'
import { AppError, constraintConflict, invalidField, preconditionFailed } from '../../errors.js'
import { deactivatePatientAccounts } from '../../identity/deleted-patient-accounts.js'
import { patchRecord, projectOnto } from '../../lib/merge-patch.js'
import { type SortOrder, sortOrder, splitListQuery, toPage } from '../../lib/paging.js'
import { type RecordList, recordList } from '../../lib/row-list.js'
import type { SyncRead } from '../../lib/sync-paging.js'
import { assertVersion, type ExpectedVersion } from '../../lib/versions.js'
import { transactionWithEvents } from '../../outbox/doorbell.js'
import { changedRow, changeWithEvent } from '../../outbox/enqueue.js'
import { checkDetailedCodes } from './demographics.js'
import { findPatient, insertPatientWithEvent, listPatients as listPatientRows } from './fast-path.js'
import { demographicColumns, patientEvent, toPatient } from './mapper.js'
import {
  live,
  PATIENT_SORT_COLUMNS,
  searchPatients as searchPatientRows,
  syncPatients as syncPatientRows,
  updatePatientQuery,
} from './queries.js'
import { parseSearchTerms } from './search-terms.js'

const EARLIEST_BIRTH_DATE = '1900-01-01'
// The latest calendar date anywhere on Earth (UTC+14), so a newborn registered today is accepted.
const latestDateToday = () => new Date(Date.now() + 14 * 3600_000).toISOString().slice(0, 10)

function checkBody(body: CreatePatientBody): void {
  checkBirthDate(body.identification.dateOfBirth)
  checkDetailedCodes(body)
}

function checkBirthDate(dateOfBirth: string): void {
  if (dateOfBirth > latestDateToday()) {
    throw invalidField('identification.dateOfBirth', 'must not be in the future')
  }
  if (dateOfBirth < EARLIEST_BIRTH_DATE) {
    throw invalidField('identification.dateOfBirth', `must not be before ${EARLIEST_BIRTH_DATE}`)
  }
}

/** The spec's organization rule: a patient of another organization is 403, a missing one 404. */
async function missingPatient(db: Db, actor: Actor, id: number): Promise<never> {
  return missingRecord('Patient', id, await ownerOrganization(db, 'patients', id), actor)
}

// A generated MRN can only collide with one a client chose by hand; a few fresh draws settle it.
const GENERATED_MRN_ATTEMPTS = 5

export const createPatient = async (db: Db, actor: Actor, body: CreatePatientBody): Promise<Patient> =>
  toPatient(await insertPatient(db, actor, body))

/** Registers a patient (patient.created): the row as stored. */
export async function insertPatient(db: Db, actor: Actor, body: CreatePatientBody): Promise<PatientRow> {
  checkBody(body)
  const row: NewPatientRow = {
    ...demographicColumns(body),
    organization_id: actor.organizationId,
    ...(body.mrn ? { mrn: body.mrn } : {}),
    ...(body.status ? { status: body.status } : {}),
    created_by: actor.userId,
    updated_by: actor.userId,
    deleted_at: null,
    deleted_by: null,
  }
  const audit = currentChangeAudit()
  const insert = async () =>
    changedRow(
      db,
      await insertPatientWithEvent(
        db,
        actor.organizationId,
        new Date().toISOString(),
        row,
        audit?.fields ?? {},
      ),
      audit,
    )
  let inserted = await insert()
  for (let attempt = 1; !inserted && !body.mrn && attempt < GENERATED_MRN_ATTEMPTS; attempt++) {
    inserted = await insert()
  }
  if (!inserted)
    throw body.mrn
      ? constraintConflict('patients_organization_mrn_key')
      : new AppError('SYS_001', 'Could not allocate an MRN')
  return inserted
}

/** The organization's live patient with this id, if there is one (no 403/404 rule: the caller decides). */
export const findPatientOfOrganization = (db: Db, organizationId: number, id: number) =>
  findPatient(db, organizationId, id)

/**
 * Whether the patient `id` names (a column of the statement) is a live patient of the organization,
 * as a condition of a statement that writes records of patients only then: requirePatient's check
 * and the write in one round trip.
 */
export const isLivePatient = (db: Db, organizationId: number, id: Expression<number>) =>
  sql<boolean>`exists ${live(db, organizationId).select(sql.lit(1).as('live')).where('id', '=', id)}`

/** The live patient, if of the caller's organization; otherwise 403 or 404. */
export async function requirePatient(db: Db, actor: Actor, id: number): Promise<PatientRow> {
  return (await findPatient(db, actor.organizationId, id)) ?? missingPatient(db, actor, id)
}

export async function getPatient(db: Db, actor: Actor, id: number): Promise<Patient> {
  return toPatient(await requirePatient(db, actor, id))
}

/**
 * A patient that a conditional write did not find: 403 or 404 when it is not the caller's live
 * patient, otherwise 412 with its current version.
 */
async function unwritablePatient(db: Db, actor: Actor, id: number): Promise<never> {
  const current = await requirePatient(db, actor, id)
  throw preconditionFailed(current.version)
}

/**
 * A patient that an update did not write: 403 or 404 when it is not the caller's live patient,
 * 412 when it is at another version than `expectedVersion`; otherwise the update would have
 * changed nothing, and the patient is as it was.
 */
async function unchangedPatient(
  db: Db,
  actor: Actor,
  id: number,
  expectedVersion: ExpectedVersion,
): Promise<PatientRow> {
  const current = await requirePatient(db, actor, id)
  assertVersion(current.version, expectedVersion)
  return current
}

/** Changes the live patient and emits its event, in one conditional statement (updatePatientQuery). */
function writePatient(
  db: Db,
  actor: Actor,
  id: number,
  changes: PatientRowUpdate,
  expectedVersion: ExpectedVersion,
) {
  const update = updatePatientQuery(db, actor.organizationId, id, changes, expectedVersion)
  return changeWithEvent(db, actor.organizationId, 'patient.updated', update, patientEvent.toSql)
}

/**
 * Replaces the patient's fields, in one conditional statement with its event: with
 * `expectedVersion`, only while the patient is still at that version. Values that are already the
 * patient's are no change: the version stays and no event is emitted.
 */
export const updatePatient = async (
  db: Db,
  actor: Actor,
  id: number,
  body: UpdatePatientBody,
  expectedVersion: ExpectedVersion,
): Promise<Patient> => toPatient(await replacePatient(db, actor, id, body, expectedVersion))

/** updatePatient, answering the row as stored. */
export async function replacePatient(
  db: Db,
  actor: Actor,
  id: number,
  body: UpdatePatientBody,
  expectedVersion: ExpectedVersion,
): Promise<PatientRow> {
  checkBody(body)
  const updated = await writePatient(
    db,
    actor,
    id,
    {
      ...demographicColumns(body),
      // Left out, the MRN and status keep their values.
      ...(body.mrn ? { mrn: body.mrn } : {}),
      ...(body.status ? { status: body.status } : {}),
      updated_by: actor.userId,
    },
    expectedVersion,
  )
  return updated ?? unchangedPatient(db, actor, id, expectedVersion)
}

/** A JSON Merge Patch of the patient: the merged record is checked like a full replacement. */
export async function patchPatient(
  db: Db,
  actor: Actor,
  id: number,
  patch: PatchPatientBody,
  expectedVersion: ExpectedVersion,
  validate: (merged: unknown) => UpdatePatientBody,
): Promise<Patient> {
  return patchRecord({
    patch,
    expected: expectedVersion,
    read: () => getPatient(db, actor, id),
    bodyOf: (patient) => projectOnto(UpdatePatientBody, patient),
    validate,
    write: (body, version) => updatePatient(db, actor, id, body, version),
  })
}

/**
 * Soft delete: the patient leaves every read and search, while the row (and later clinical
 * records) stay for the retention the law requires. The MRN stays reserved; sync readers see a
 * tombstone. The patient's own accounts are deactivated with it.
 */
export async function deletePatient(
  db: Db,
  actor: Actor,
  id: number,
  expectedVersion: ExpectedVersion,
): Promise<{ id: number }> {
  const deleted = await transactionWithEvents(db, async (trx) => {
    const row = await writePatient(
      trx,
      actor,
      id,
      { deleted_at: new Date(), deleted_by: actor.userId, updated_by: actor.userId },
      expectedVersion,
    )
    if (row) await deactivatePatientAccounts(trx, actor.organizationId, id)
    return row
  })
  return deleted ? { id } : unwritablePatient(db, actor, id)
}

const DEFAULT_SORT = { field: 'lastName', direction: 'asc' } as const

/** The organization's patients a list query asks for; a sync page has tombstones of removed ones. */
export function listPatients(db: Db, actor: Actor, query: PatientListQuery): RecordList<Patient> {
  const { paging, filters } = splitListQuery(query)
  const sort = sortOrder(paging.sort, PATIENT_SORT_COLUMNS, DEFAULT_SORT)
  const rows = {
    page: (order: SortOrder, page: PageQuery) =>
      listPatientRows(db, actor.organizationId, filters, order, page),
    changes: (read: SyncRead) => syncPatientRows(db, actor.organizationId, filters, read),
  }
  return recordList(rows, paging, sort, (found) => found.map(toPatient))
}

export async function searchPatients(
  db: Db,
  actor: Actor,
  query: PatientSearchQuery,
): Promise<PageOf<Patient>> {
  const paging = { page: query.page, size: query.size }
  const { rows, total } = await searchPatientRows(
    db,
    actor.organizationId,
    parseSearchTerms(query.q),
    sortOrder(query.sort, PATIENT_SORT_COLUMNS, DEFAULT_SORT),
    paging,
  )
  return toPage(rows.map(toPatient), total, paging)
}

/** What the SMART patient picker looks for: every part given must match. */
export interface PatientLookup {
  /** Words as a search's `q` takes them. */
  words?: string
  dateOfBirth?: string
  mrn?: string
}

/**
 * The first `limit` of the organization's live patients matching the lookup (the words as a search
 * matches them, the birth date and MRN exactly), by name, and how many match in all.
 */
export async function lookUpPatients(
  db: Db,
  organizationId: number,
  { words, dateOfBirth, mrn }: PatientLookup,
  limit: number,
): Promise<{ patients: Patient[]; total: number }> {
  const { rows, total } = await searchPatientRows(
    db,
    organizationId,
    parseSearchTerms(words ?? ''),
    sortOrder(undefined, PATIENT_SORT_COLUMNS, DEFAULT_SORT),
    { page: 0, size: limit },
    { dateOfBirth, mrn },
  )
  return { patients: rows.map(toPatient), total }
}

export { checkDetailedCodes } from './demographics.js'
export { demographicColumns } from './mapper.js'
