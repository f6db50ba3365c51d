import { type Db, inTransaction, type Trx } from '../../../db/database.js'
import type { EncounterRow } from '../../../db/tables/encounters.js'
import { TIME_RELEASING_STATUSES } from '../../../schemas/appointments.js'
import {
  type AddendumBody,
  type CreateEncounterBody,
  ENCOUNTER_OPERATIONS,
  type Encounter,
  type EncounterListQuery,
  type EncounterOperation,
  type EncounterStatus,
  type PatchEncounterBody,
  UpdateEncounterBody,
} from '../../../schemas/encounters.js'
import { type Actor, missingRecord, ownerOrganization } from '../../access/organization-scope.js'
import { auditChange, auditedAs } from '../../audit/change-audit.js'
import { conflict, forbidden, invalidField } from '../../errors.js'
import { patchRecord, projectOnto } from '../../lib/merge-patch.js'
import { checkDateRange, sortOrder, splitListQuery } from '../../lib/paging.js'
import type { RecordVersion } from '../../lib/record-history.js'
import { type RecordList, recordList, withLookup } from '../../lib/row-list.js'
import { atExpectedVersion, type ExpectedVersion, touch } from '../../lib/versions.js'
import { transactionWithEvents } from '../../outbox/doorbell.js'
import { enqueueEvent } from '../../outbox/enqueue.js'
import { requireAppointment } from '../appointments/service.js'
import { requirePatient } from '../patients/service.js'
import { requireProvider } from '../providers/service.js'
import { noteColumns, toEncounter, toEncounterCreatedData } from './mapper.js'
import {
  addendaOf,
  ENCOUNTER_SORT_COLUMNS,
  encounterRecords,
  encounterRows,
  insertAddendum,
  insertDiagnosisRecords,
} from './queries.js'

async function missingEncounter(db: Db, actor: Actor, id: number): Promise<never> {
  return missingRecord('Encounter', id, await ownerOrganization(db, 'encounters', id), actor)
}

/** The encounter locked for a change, at the version `If-Match` names if it names one. */
async function lockEncounterAt(trx: Trx, actor: Actor, id: number, expectedVersion: ExpectedVersion) {
  const locked = await encounterRecords.lock(trx, actor.organizationId, id)
  return atExpectedVersion(locked, expectedVersion, () => missingEncounter(trx, actor, id))
}

const OPERATION_NAMES: Record<EncounterOperation, string> = {
  edit: 'edited',
  sign: 'signed',
  addendum: 'given an addendum',
}

/** The lifecycle table decides what may be done to an encounter in its status; otherwise 409. */
function checkOperation(row: EncounterRow, operation: EncounterOperation): void {
  const allowed: readonly EncounterStatus[] = ENCOUNTER_OPERATIONS[operation]
  if (!allowed.includes(row.status as EncounterStatus)) {
    throw conflict(
      `The encounter is ${row.status} and cannot be ${OPERATION_NAMES[operation]}; only ${allowed.join(' or ')} ones can${
        operation === 'edit' ? ' (add an addendum to a signed note)' : ''
      }`,
    )
  }
}

/** The appointment an encounter documents: same organization, patient and provider, not called off. */
async function checkAppointment(trx: Trx, actor: Actor, body: CreateEncounterBody) {
  if (!body.appointmentId) return
  const appointment = await requireAppointment(trx, actor, body.appointmentId)
  if (appointment.patient_id !== body.patientId || appointment.provider_id !== body.providerId) {
    throw invalidField('appointmentId', 'is an appointment of another patient or provider')
  }
  if ((TIME_RELEASING_STATUSES as readonly string[]).includes(appointment.status)) {
    throw conflict(`The appointment is ${appointment.status} and cannot have an encounter`)
  }
}

export async function createEncounter(db: Db, actor: Actor, body: CreateEncounterBody): Promise<Encounter> {
  return transactionWithEvents(db, async (trx) => {
    await requirePatient(trx, actor, body.patientId)
    await requireProvider(trx, actor, body.providerId)
    await checkAppointment(trx, actor, body)
    const row = await encounterRecords.insert(trx, {
      ...noteColumns(body),
      organization_id: actor.organizationId,
      patient_id: body.patientId,
      provider_id: body.providerId,
      appointment_id: body.appointmentId ?? null,
      signed_by: null,
      signed_at: null,
      created_by: actor.userId,
      updated_by: actor.userId,
    })
    await enqueueEvent(trx, actor.organizationId, 'encounter.created', toEncounterCreatedData(row))
    await auditChange(trx, [row.id])
    return toEncounter(row, [])
  })
}

/** The encounter's row (403 for another organization's, 404 when there is none). */
export async function requireEncounter(db: Db, actor: Actor, id: number): Promise<EncounterRow> {
  return (await encounterRecords.find(db, actor.organizationId, id)) ?? missingEncounter(db, actor, id)
}

export async function getEncounter(db: Db, actor: Actor, id: number): Promise<Encounter> {
  const row = await requireEncounter(db, actor, id)
  return toEncounter(row, await addendaOf(db, actor.organizationId, [id]))
}

/** An encounter as it was at a version (src/lib/record-history.ts): its note then, and the addenda written by then. */
export async function encounterAsOf(version: RecordVersion<'encounters'>, db: Db): Promise<Encounter> {
  const addenda = await addendaOf(db, version.organization_id, [version.id])
  // An addendum raises the encounter's version in its own transaction: both carry that time.
  return toEncounter(
    version,
    addenda.filter((addendum) => addendum.signed_at <= version.updated_at),
  )
}

/** Who edits a note: the actor and their roles (an administrator may edit any draft). */
export type Editor = Actor & { roles: readonly string[] }

/**
 * A draft note is its author's: when the encounter's provider has a user account, only that user
 * or an administrator may change it (the same rule as signing, which attests authorship, plus the
 * administrator for corrections). A provider without an account has no one to defer to, so any
 * provider of the organization may, as for signing.
 */
async function checkEditor(trx: Trx, editor: Editor, row: EncounterRow): Promise<void> {
  if (editor.roles.includes('ADMIN')) return
  const provider = await requireProvider(trx, editor, row.provider_id)
  if (provider.user_id !== null && provider.user_id !== editor.userId) {
    throw forbidden('Only the encounter’s provider or an administrator may edit its note')
  }
}

export async function updateEncounter(
  db: Db,
  actor: Editor,
  id: number,
  body: UpdateEncounterBody,
  expectedVersion: ExpectedVersion,
): Promise<Encounter> {
  return inTransaction(db, async (trx) => {
    const current = await lockEncounterAt(trx, actor, id, expectedVersion)
    checkOperation(current, 'edit')
    await checkEditor(trx, actor, current)
    const updated = await encounterRecords.update(trx, actor.organizationId, id, {
      ...noteColumns(body),
      updated_by: actor.userId,
    })
    if (updated) await auditChange(trx, [id])
    return toEncounter(updated ?? current, [])
  })
}

/** A JSON Merge Patch of a draft encounter's note: the merged note is checked like a full replacement. */
export async function patchEncounter(
  db: Db,
  actor: Editor,
  id: number,
  patch: PatchEncounterBody,
  expectedVersion: ExpectedVersion,
  validate: (merged: unknown) => UpdateEncounterBody,
): Promise<Encounter> {
  return patchRecord({
    patch,
    expected: expectedVersion,
    read: () => getEncounter(db, actor, id),
    bodyOf: (encounter) => projectOnto(UpdateEncounterBody, encounter),
    validate,
    write: (body, version) => updateEncounter(db, actor, id, body, version),
  })
}

/**
 * Signs and locks the note. When the encounter's provider has a user account, only that user may
 * sign: a signature attests authorship. Otherwise any provider of the organization may. Audited as
 * a signature whichever call signs (a FHIR update to finished does).
 */
export async function signEncounter(
  db: Db,
  actor: Actor,
  id: number,
  // The seed script signs unconditionally.
  expectedVersion: ExpectedVersion = undefined,
): Promise<Encounter> {
  return auditedAs('SIGN', () =>
    inTransaction(db, async (trx) => {
      const current = await lockEncounterAt(trx, actor, id, expectedVersion)
      checkOperation(current, 'sign')
      const provider = await requireProvider(trx, actor, current.provider_id)
      if (provider.user_id !== null && provider.user_id !== actor.userId) {
        throw forbidden('Only the encounter’s provider may sign it')
      }
      const signed = await encounterRecords.update(trx, actor.organizationId, id, {
        status: 'SIGNED',
        signed_by: actor.userId,
        signed_at: new Date(),
        updated_by: actor.userId,
      })
      if (signed) {
        await insertDiagnosisRecords(trx, signed)
        await auditChange(trx, [id])
      }
      return toEncounter(signed ?? current, [])
    }),
  )
}

export async function addAddendum(
  db: Db,
  actor: Actor,
  id: number,
  body: AddendumBody,
  expectedVersion: ExpectedVersion,
): Promise<Encounter> {
  return inTransaction(db, async (trx) => {
    const current = await lockEncounterAt(trx, actor, id, expectedVersion)
    checkOperation(current, 'addendum')
    await insertAddendum(trx, {
      encounter_id: id,
      organization_id: actor.organizationId,
      text: body.text,
      signed_by: actor.userId,
    })
    // A further addendum leaves the status as it was; touched, the encounter still counts it as a change.
    const amended = await encounterRecords.update(trx, actor.organizationId, id, {
      status: 'AMENDED',
      ...touch(),
      updated_by: actor.userId,
    })
    if (amended) await auditChange(trx, [id])
    return toEncounter(amended ?? current, await addendaOf(trx, actor.organizationId, [id]))
  })
}

const DEFAULT_SORT = { field: 'encounterDate', direction: 'desc' } as const

/** The organization's encounters a list query asks for, with their addenda. */
export function listEncounters(db: Db, actor: Actor, query: EncounterListQuery): RecordList<Encounter> {
  const { paging, filters } = splitListQuery(query)
  checkDateRange(filters)
  const sort = sortOrder(paging.sort, ENCOUNTER_SORT_COLUMNS, DEFAULT_SORT)
  const withAddenda = withLookup((ids) => addendaOf(db, actor.organizationId, ids), toEncounter)
  return recordList(encounterRows(db, actor.organizationId, filters), paging, sort, withAddenda)
}

/** For records that point at an encounter: it must be one of this patient's, in this organization. */
export async function checkEncounterOfPatient(
  db: Db,
  organizationId: number,
  patientId: number,
  encounterId: number,
): Promise<void> {
  const encounter = await encounterRecords.find(db, organizationId, encounterId)
  if (encounter?.patient_id !== patientId) {
    throw invalidField('encounterId', 'is not an encounter of this patient')
  }
}
