import { isDeepStrictEqual } from 'node:util'
import type { CodeableConcept, Reference, Resource } from '@medplum/fhirtypes'
import { type Static, type TObject, Type } from '@sinclair/typebox'
import type { Db } from '../../../db/database.js'
import type { ClinicalRecordRow } from '../../../db/tables/clinical-records.js'
import { ENTERED_IN_ERROR } from '../../../schemas/clinical.js'
import { Id } from '../../../schemas/common.js'
import type { Actor } from '../../access/organization-scope.js'
import { AppError, invalidField, notFound, withFields } from '../../errors.js'
import { inOrganization } from '../../lib/organization-records.js'
import { type ClinicalKind, correctRecordRow, createRecordRow, enterInError } from '../clinical/service.js'
import { requirePatient } from '../patients/service.js'
import { withdrawn } from './clinical-record.js'
import { withoutUndefined } from './resource-elements.js'
import type { ResourceWrites } from './resource-writes.js'
import { idIn, referencedId } from './written-references.js'

// Clinical records written as FHIR resources: what the writes of Condition, AllergyIntolerance,
// MedicationStatement and Observation (of each of its kinds) share. Records are never deleted:
// DELETE enters one in error.

/** The REST body a clinical resource stands for: the record's patient and its kind's input. */
export interface ClinicalBody<I extends TObject> {
  patientId: number
  input: Static<I>
  /** The recording time the resource gives: only the record's own can be kept (it is the server's). */
  recordedAt?: string
  /** The resource says entered in error: a record is withdrawn by DELETE, never by a write. */
  enteredInError?: true
}

/** What a resource says of its record, read off its elements. */
export interface ClinicalStatement {
  patient: Reference | undefined
  encounter: Reference | undefined
  recordedAt: string | undefined
  enteredInError: boolean
  /** The kind's input fields the resource gives (the encounter aside), checked by the body's schema next. */
  input: Record<string, unknown>
}

/** The body fields named by the generic part, whatever the kind (a resource may not show `recordedAt`). */
type CommonField = 'patientId' | 'enteredInError' | 'input.encounterId'

export interface ClinicalWritesDefinition<R extends Resource, I extends TObject, D extends TObject> {
  type: R['resourceType']
  kind: ClinicalKind<I, D>
  toFhir(row: ClinicalRecordRow): R & { id: string }
  /** The resource as written, where a write gives it otherwise than a read shows it: what a write is checked against. */
  written?(row: ClinicalRecordRow): R
  statementOf(resource: R): ClinicalStatement
  /**
   * The element of each body field, from the resource (`subject`, `code.coding`): a 422 about the
   * field names it.
   */
  elements: Record<CommonField, string> &
    Partial<Record<'recordedAt' | `input.${keyof Static<I> & string}`, string>>
  /**
   * Values of the record that the resource cannot show, which an update keeps where the resource
   * gives none: its client never saw them, and a resource written back as read changes nothing.
   */
  unseen(data: Static<D>, sent: Static<I>): Partial<Static<I>>
}

const DELETED_REASON = 'Deleted through the FHIR API'

// What a preview's row holds besides the body's values: nothing a comparison looks at.
const PREVIEW_TIME = new Date(0)
const PREVIEW_ROW = {
  id: 0,
  organization_id: 0,
  version: 1,
  recorded_by: 0,
  updated_by: 0,
  created_at: PREVIEW_TIME,
  updated_at: PREVIEW_TIME,
  member_ids: null,
}

/** The code a concept gives in a code system. */
export const codeIn = (concept: CodeableConcept | undefined, system: string): string | undefined =>
  concept?.coding?.find((coding) => coding.system === system)?.code

/** Our value of a FHIR code, from a table `inverse` made; undefined for a code the table lacks. */
export const oursOf = (table: Record<string, string[]>, code: string | undefined): string | undefined =>
  code === undefined ? undefined : table[code]?.[0]

/** The error with the fields it names renamed (a kind's `onsetDate` is the body's `input.onsetDate`). */
const renamed = (error: unknown, rename: (path: string) => string) =>
  error instanceof AppError && error.fields
    ? withFields(
        error,
        error.fields.map((field) => ({ ...field, path: rename(field.path) })),
      )
    : error

/** The error of a kind's rule, the fields it names being those of the body's input. */
const inputError = (error: unknown) => renamed(error, (path) => `input.${path}`)

const encounterOf = (body: ClinicalBody<TObject>) => (body.input as { encounterId?: number }).encounterId

/** A service write, the fields its rules name being those of the body's input. */
async function inInput<T>(write: () => Promise<T>): Promise<T> {
  try {
    return await write()
  } catch (error) {
    throw inputError(error)
  }
}

/**
 * A write of a record of the patient, who must be a live patient of the organization: the
 * service's check refuses another organization's (403); a reference to no patient is a 422 naming it.
 */
async function ofPatient<T>(patientId: number, write: () => Promise<T>): Promise<T> {
  try {
    return await write()
  } catch (error) {
    if (error instanceof AppError && error.code === 'RES_001') {
      throw invalidField('patientId', `names no patient of this practice (Patient/${patientId})`)
    }
    throw error
  }
}

/**
 * Writes of one kind of clinical record through the clinical service, as its REST routes make
 * them: create, correction (update and patch), and DELETE as entering in error (the record stays,
 * with its entered-in-error status, as REST shows it).
 */
export function clinicalWrites<R extends Resource, I extends TObject, D extends TObject>(
  definition: ClinicalWritesDefinition<R, I, D>,
): ResourceWrites<R, ClinicalBody<I>> {
  const { type, kind, toFhir, statementOf } = definition
  const fieldExpressions: Record<string, string> = Object.fromEntries(
    Object.entries(definition.elements).map(([field, element]) => [field, `${type}.${element}`]),
  )
  const collection = `/api/patients/:patientId/${kind.path}` as const

  async function recordOf(db: Db, actor: Actor, id: number): Promise<ClinicalRecordRow> {
    const row = await inOrganization(db, actor.organizationId)
      .selectFrom('clinical_records')
      .selectAll()
      .where('kind', '=', kind.kind)
      .where('id', '=', id)
      .executeTakeFirst()
    if (!row) throw notFound(`${type}/${id}`)
    return row
  }

  /** The kind's rules, as the write applies them (`previous`: to a correction), naming the body's fields. */
  function prepared(input: Static<I>, previous?: Static<D>) {
    try {
      return kind.prepare(input, previous)
    } catch (error) {
      throw inputError(error)
    }
  }

  /** The REST body a resource stands for: what it says of its record, its references as ids. */
  function bodyOf(resource: R): ClinicalBody<I> {
    const said = statementOf(resource)
    const encounterId = idIn(said.encounter, 'Encounter', 'input.encounterId')
    return withoutUndefined({
      patientId: idIn(said.patient, 'Patient', 'patientId'),
      input: withoutUndefined({ ...said.input, encounterId }),
      recordedAt: said.recordedAt,
      enteredInError: said.enteredInError ? true : undefined,
    }) as ClinicalBody<I>
  }

  /** The resource as a read would show the record holding `body`, prepared as `record`. */
  function previewOf(body: ClinicalBody<I>, record: ReturnType<typeof prepared>): R {
    const { data, status, code, effectiveAt } = record
    const removed = body.enteredInError === true
    const encounterId = encounterOf(body)
    return (definition.written ?? toFhir)({
      ...PREVIEW_ROW,
      kind: kind.kind,
      patient_id: body.patientId,
      encounter_id: encounterId ?? null,
      status: removed ? ENTERED_IN_ERROR : status,
      code,
      effective_at: effectiveAt ?? PREVIEW_TIME,
      data: { ...data, ...(removed ? { [kind.statusField]: ENTERED_IN_ERROR } : {}) },
      recorded_at: body.recordedAt === undefined ? PREVIEW_TIME : new Date(body.recordedAt),
      entered_in_error_at: removed ? PREVIEW_TIME : null,
      entered_in_error_by: removed ? 0 : null,
      entered_in_error_reason: removed ? DELETED_REASON : null,
    })
  }

  return {
    rest: {
      create: `POST ${collection}`,
      update: `PUT ${collection}/:id`,
      delete: `POST ${collection}/:id/entered-in-error`,
    },
    bodySchema: Type.Object(
      {
        patientId: Id,
        input: kind.input,
        recordedAt: Type.Optional(Type.String({ format: 'date-time' })),
        enteredInError: Type.Optional(Type.Literal(true)),
      },
      { additionalProperties: false },
    ),
    fieldExpressions,
    bodyOf,
    preview(body, current) {
      if (current === undefined) return previewOf(body, prepared(body.input))
      const was = bodyOf(current)
      // An update the service refuses whatever the record holds (moving it to another patient,
      // withdrawing it, correcting a withdrawn one): as sent, so that the refusal is the service's.
      if (was.patientId !== body.patientId || body.enteredInError || was.enteredInError) {
        return previewOf(body, prepared(body.input))
      }
      // As the service corrects the record: a body saying what the resource read says changes
      // nothing, which leaves the record as it is; any other is prepared as a correction of it, which
      // may mark it (a vital-signs record AMENDED, a final lab result CORRECTED).
      const previous = prepared(was.input).data
      const corrected = prepared(body.input, previous)
      const unchanged =
        body.recordedAt === was.recordedAt &&
        encounterOf(body) === encounterOf(was) &&
        isDeepStrictEqual(corrected, prepared(was.input, previous))
      return unchanged ? current : previewOf(body, corrected)
    },
    patientOf: (resource) => referencedId(statementOf(resource).patient, 'Patient'),
    async create(db, actor, body) {
      if (body.enteredInError) {
        throw invalidField('enteredInError', 'cannot be said of a new record')
      }
      if (body.recordedAt !== undefined) {
        throw invalidField('recordedAt', 'is set by this server when it stores the record')
      }
      const { patientId, input } = body
      return toFhir(
        await ofPatient(patientId, () => inInput(() => createRecordRow(db, kind, actor, patientId, input))),
      )
    },
    async update(db, actor, id, body, expected) {
      await ofPatient(body.patientId, () => requirePatient(db, actor, body.patientId))
      const current = await recordOf(db, actor, id)
      if (current.patient_id !== body.patientId) {
        throw invalidField('patientId', `cannot change: the record is Patient/${current.patient_id}’s`)
      }
      if (body.recordedAt !== undefined && Date.parse(body.recordedAt) !== current.recorded_at.getTime()) {
        throw invalidField('recordedAt', 'cannot change: it is when the record was first stored')
      }
      if (body.enteredInError && !withdrawn(current)) {
        throw invalidField('enteredInError', 'is not set by an update: DELETE enters a record in error')
      }
      const input = { ...body.input, ...definition.unseen(current.data as Static<D>, body.input) }
      // The values kept are those of the version read: a change in between is 412.
      const version = expected ?? current.version
      return toFhir(
        await inInput(() => correctRecordRow(db, kind, actor, current.patient_id, id, input, version)),
      )
    },
    async delete(db, actor, id, expected) {
      const current = await recordOf(db, actor, id)
      // Entered in error already: deleting it again changes nothing.
      if (withdrawn(current)) return
      await enterInError(db, kind, actor, current.patient_id, id, DELETED_REASON, expected)
    },
  }
}
