import type { Kysely } from 'kysely'
import type { Database, Db } from '../../../db/database.js'
import type { PatientRow } from '../../../db/tables/patients.js'
import type { PageOf } from '../../../schemas/common.js'
import type {
  CreatePatientBody,
  Patient,
  PatientListQuery,
  PatientSearchQuery,
  UpdatePatientBody,
} from '../../../schemas/patients.js'
import { type Actor, missingRecord, ownerOrganization } from '../../access/organization-scope.js'
import { AppError } from '../../errors.js'
import { sortOrder, toPage } from '../../lib/paging.js'
import { changeWithEvent } from '../../outbox/enqueue.js'
import { demographicColumns, patientEvent, toPatient } from './mapper.js'
import {
  findPatient,
  insertPatientQuery,
  listPatients as listPatientRows,
  lockPatient,
  PATIENT_SORT_COLUMNS,
  searchPatients as searchPatientRows,
  updatePatientQuery,
} from './queries.js'
import { parseSearchTerms } from './search-terms.js'

const EARLIEST_BIRTH_DATE = '1900-01-01'
// The latest calendar date anywhere on Earth (UTC+14), so a newborn registered today is accepted.
const latestDateToday = () => new Date(Date.now() + 14 * 3600_000).toISOString().slice(0, 10)

function checkBirthDate(dateOfBirth: string): void {
  if (dateOfBirth > latestDateToday()) {
    throw new AppError('VAL_001', 'identification.dateOfBirth must not be in the future')
  }
  if (dateOfBirth < EARLIEST_BIRTH_DATE) {
    throw new AppError('VAL_001', `identification.dateOfBirth must not be before ${EARLIEST_BIRTH_DATE}`)
  }
}

/** The spec's organization rule: a patient of another organization is 403, a missing one 404. */
async function missingPatient(db: Db, actor: Actor, id: number): Promise<never> {
  return missingRecord('Patient', id, await ownerOrganization(db, 'patients', id), actor)
}

const duplicateMrn = (mrn: string) =>
  new AppError('RES_002', `A patient with MRN ${mrn} already exists in this organization`)

// A generated MRN can only collide with one a client chose by hand; a few fresh draws settle it.
const GENERATED_MRN_ATTEMPTS = 5

export async function createPatient(
  db: Kysely<Database>,
  actor: Actor,
  body: CreatePatientBody,
): Promise<Patient> {
  checkBirthDate(body.identification.dateOfBirth)
  const row = {
    ...demographicColumns(body),
    organization_id: actor.organizationId,
    ...(body.mrn ? { mrn: body.mrn } : {}),
    ...(body.status ? { status: body.status } : {}),
    created_by: actor.userId,
    updated_by: actor.userId,
    deleted_at: null,
    deleted_by: null,
  }
  // The row and its event in one statement: no transaction, one round trip per attempt.
  const insert = () =>
    changeWithEvent(
      db,
      actor.organizationId,
      'patient.created',
      insertPatientQuery(db, row),
      patientEvent.toSql,
    )
  let inserted = await insert()
  for (let attempt = 1; !inserted && !body.mrn && attempt < GENERATED_MRN_ATTEMPTS; attempt++) {
    inserted = await insert()
  }
  if (!inserted)
    throw body.mrn ? duplicateMrn(body.mrn) : new AppError('SYS_001', 'Could not allocate an MRN')
  return toPatient(inserted)
}

/** The organization's live patient with this id, if there is one (no 403/404 rule: the caller decides). */
export const findPatientOfOrganization = (db: Kysely<Database>, organizationId: number, id: number) =>
  findPatient(db, organizationId, id)

/** The live patient, if of the caller's organization; otherwise 403 or 404. */
export async function requirePatient(db: Db, actor: Actor, id: number): Promise<PatientRow> {
  return (await findPatient(db, actor.organizationId, id)) ?? missingPatient(db, actor, id)
}

export async function getPatient(db: Kysely<Database>, actor: Actor, id: number): Promise<Patient> {
  return toPatient(await requirePatient(db, actor, id))
}

export async function updatePatient(
  db: Kysely<Database>,
  actor: Actor,
  id: number,
  body: UpdatePatientBody,
): Promise<Patient> {
  checkBirthDate(body.identification.dateOfBirth)
  return db.transaction().execute(async (trx) => {
    const current = await lockPatient(trx, actor.organizationId, id)
    if (!current) return missingPatient(trx, actor, id)
    const updated = await changeWithEvent(
      trx,
      actor.organizationId,
      'patient.updated',
      updatePatientQuery(trx, actor.organizationId, id, {
        ...demographicColumns(body),
        mrn: body.mrn ?? current.mrn,
        status: body.status ?? current.status,
        updated_by: actor.userId,
      }),
      patientEvent.toSql,
    )
    // The row is locked above, so the update always finds it.
    return toPatient(updated as PatientRow)
  })
}

/**
 * Soft delete: the patient leaves every read and search, while the row (and later clinical
 * records) stay for the retention the law requires. The MRN stays reserved.
 */
export async function deletePatient(db: Kysely<Database>, actor: Actor, id: number): Promise<{ id: number }> {
  return db.transaction().execute(async (trx) => {
    const current = await lockPatient(trx, actor.organizationId, id)
    if (!current) return missingPatient(trx, actor, id)
    await changeWithEvent(
      trx,
      actor.organizationId,
      'patient.updated',
      updatePatientQuery(trx, actor.organizationId, id, {
        deleted_at: new Date(),
        deleted_by: actor.userId,
        updated_by: actor.userId,
      }),
      patientEvent.toSql,
    )
    return { id }
  })
}

const DEFAULT_SORT = { field: 'lastName', direction: 'asc' } as const

export async function listPatients(
  db: Kysely<Database>,
  actor: Actor,
  query: PatientListQuery,
): Promise<PageOf<Patient>> {
  const { page, size, sort, ...filters } = query
  const paging = { page, size }
  const { rows, total } = await listPatientRows(
    db,
    actor.organizationId,
    filters,
    sortOrder(sort, PATIENT_SORT_COLUMNS, DEFAULT_SORT),
    paging,
  )
  return toPage(rows.map(toPatient), total, paging)
}

export async function searchPatients(
  db: Kysely<Database>,
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
