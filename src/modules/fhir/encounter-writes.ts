import type { Coding, Encounter } from '@medplum/fhirtypes'
import { type Static, Type } from '@sinclair/typebox'
import { type Db, inTransaction } from '../../../db/database.js'
import type { EncounterRow } from '../../../db/tables/encounters.js'
import { CreateEncounterBody, Encounter as RestEncounter } from '../../../schemas/encounters.js'
import { hasAnyRole } from '../../access/roles.js'
import { forbidden, invalidField } from '../../errors.js'
import type { Principal } from '../../identity/principal.js'
import { assertVersion, type ExpectedVersion } from '../../lib/versions.js'
import { requireAppointment } from '../appointments/service.js'
import {
  createEncounter,
  getEncounter,
  requireEncounter,
  signEncounter,
  updateEncounter,
} from '../encounters/service.js'
import { requirePatient } from '../patients/service.js'
import { requireProvider } from '../providers/service.js'
import { accessOf } from './access.js'
import { VISIT_TYPE_SYSTEM } from './appointment.js'
import { codeIn, oursOf } from './clinical-writes.js'
import { withoutUndefined } from './resource-elements.js'
import type { ResourceWrites } from './resource-writes.js'
import { idIn, referenced, referencedId } from './written-references.js'

const { patientId, providerId, appointmentId, encounterDate, encounterType, chiefComplaint } =
  CreateEncounterBody.properties

/**
 * The REST body an Encounter stands for: the visit's details as POST /api/encounters takes them,
 * and the note's status. The SOAP note is not among them: Encounter has no place for it, so a new
 * note is empty and an update keeps the note as it is.
 */
const EncounterBody = Type.Object(
  {
    patientId,
    providerId,
    appointmentId,
    encounterDate,
    encounterType,
    chiefComplaint,
    status: RestEncounter.properties.status,
  },
  { additionalProperties: false },
)
type EncounterBody = Static<typeof EncounterBody>

/** Who may sign a note: the roles of the REST sign route. */
const SIGNERS = accessOf('POST /api/encounters/:id/sign').allow

/** What the read mapping (encounter.ts) tells the writes. */
interface EncounterMapping {
  toFhir(row: EncounterRow): Encounter & { id: string }
  /** Our statuses of each Encounter.status a read answers, the one a write sets first. */
  statusesOf: Record<string, string[]>
  /** The class of telehealth visits. */
  virtual: Coding
}

/**
 * The visit type of an Encounter: its type's code in the service's code system. Without a type, a
 * visit of the virtual class is a telehealth visit and any other an office visit, as REST's
 * default is.
 */
function visitTypeOf(encounter: Encounter, virtual: Coding): string {
  if (encounter.type === undefined) {
    const { system, code } = encounter.class ?? {}
    return system === virtual.system && code === virtual.code ? 'TELEHEALTH' : 'OFFICE_VISIT'
  }
  const code = encounter.type.map((type) => codeIn(type, VISIT_TYPE_SYSTEM)).find((found) => found)
  if (code === undefined) {
    throw invalidField('encounterType', `needs a coding of ${VISIT_TYPE_SYSTEM}, the service’s visit types`)
  }
  return code
}

/** The REST body of a FHIR Encounter; the elements it has no field for are left to the comparison. */
function encounterBody(encounter: Encounter, mapping: EncounterMapping): EncounterBody {
  const status = oursOf(mapping.statusesOf, encounter.status)
  if (status === undefined) {
    throw invalidField(
      'status',
      `${encounter.status} is no status of this service’s visit notes: in-progress (a draft note) or finished (a signed one)`,
    )
  }
  const performer = encounter.participant?.find((participant) =>
    participant.individual?.reference?.startsWith('Practitioner/'),
  )
  return withoutUndefined({
    patientId: idIn(encounter.subject, 'Patient', 'patientId'),
    providerId: idIn(performer?.individual, 'Practitioner', 'providerId'),
    appointmentId: idIn(encounter.appointment?.[0], 'Appointment', 'appointmentId'),
    encounterDate: encounter.period?.start,
    encounterType: visitTypeOf(encounter, mapping.virtual),
    chiefComplaint: encounter.reasonCode?.[0]?.text,
    status,
  }) as EncounterBody
}

// What a preview's row holds besides the body's columns: nothing the read renders.
const PREVIEW_ROW = {
  id: 0,
  subjective: null,
  objective: null,
  assessment: null,
  diagnoses: [],
  plan: null,
  signed_by: null,
  signed_at: null,
  created_by: null,
  updated_by: null,
  created_at: new Date(0),
  updated_at: new Date(0),
  version: 1,
}

const previewRow = (body: EncounterBody, organizationId: number): EncounterRow => ({
  ...PREVIEW_ROW,
  organization_id: organizationId,
  patient_id: body.patientId,
  provider_id: body.providerId,
  appointment_id: body.appointmentId ?? null,
  encounter_date: body.encounterDate,
  encounter_type: body.encounterType,
  chief_complaint: body.chiefComplaint ?? null,
  status: body.status,
})

/** A note as POST /api/encounters starts one: a draft, its SOAP note empty. */
async function start(db: Db, actor: Principal, body: EncounterBody): Promise<number> {
  if (body.status !== 'DRAFT') {
    throw invalidField(
      'status',
      'a new encounter is a draft note (in-progress); it is signed by an update to finished',
    )
  }
  const { status: _draft, ...details } = body
  await referenced('patientId', `Patient/${body.patientId}`, () => requirePatient(db, actor, body.patientId))
  await referenced('providerId', `Practitioner/${body.providerId}`, () =>
    requireProvider(db, actor, body.providerId),
  )
  const appointment = body.appointmentId
  if (appointment) {
    await referenced('appointmentId', `Appointment/${appointment}`, () =>
      requireAppointment(db, actor, appointment),
    )
  }
  return (await createEncounter(db, actor, details)).id
}

/** A note keeps its patient, provider and appointment (REST's update takes none of them). */
function checkKept(current: EncounterRow, body: EncounterBody): void {
  const kept = {
    patientId: [current.patient_id, body.patientId],
    providerId: [current.provider_id, body.providerId],
    appointmentId: [current.appointment_id, body.appointmentId ?? null],
  }
  for (const [field, [held, sent]] of Object.entries(kept)) {
    if (held !== sent) {
      throw invalidField(field, 'cannot change: a visit note keeps its patient, provider and appointment')
    }
  }
}

/**
 * An update as the REST routes make it: new visit details are PUT /api/encounters/{id}'s edit of
 * the draft (keeping its SOAP note), `finished` is its signing (POST /api/encounters/{id}/sign,
 * under that route's roles), both in one transaction. A signed note changed in any way, or taken
 * back to in-progress, is refused by the edit as REST refuses it (409). Nothing to change is no
 * change: only the version is checked. Answers the encounter's row as it then is.
 */
async function change(
  db: Db,
  actor: Principal,
  id: number,
  body: EncounterBody,
  expected: ExpectedVersion,
): Promise<EncounterRow> {
  const current = await requireEncounter(db, actor, id)
  assertVersion(current.version, expected)
  checkKept(current, body)
  const edits =
    body.encounterDate !== current.encounter_date ||
    body.encounterType !== current.encounter_type ||
    (body.chiefComplaint ?? null) !== current.chief_complaint ||
    (body.status === 'DRAFT' && current.status !== 'DRAFT')
  const signs = body.status !== 'DRAFT' && current.status === 'DRAFT'
  if (!edits && !signs) return current
  if (signs && !hasAnyRole(actor.authorities, SIGNERS)) {
    throw forbidden(`Signing a note requires one of the roles: ${SIGNERS.join(', ')}`)
  }
  await inTransaction(db, async (trx) => {
    // The note kept is the one of the version read: a change in between is 412.
    let version = expected ?? current.version
    if (edits) {
      const { soapNote } = await getEncounter(trx, actor, id)
      const details = { encounterDate: body.encounterDate, encounterType: body.encounterType }
      const edited = { ...details, chiefComplaint: body.chiefComplaint ?? null, soapNote }
      version = (await updateEncounter(trx, actor, id, edited, version)).version
    }
    if (signs) await signEncounter(trx, actor, id, version)
  })
  return requireEncounter(db, actor, id)
}

/**
 * Encounter writes through the encounters service: a new draft note (POST /api/encounters), an
 * edit of its visit details (PUT /api/encounters/{id}) and its signing (POST
 * /api/encounters/{id}/sign). Notes are never removed, so there is no delete; addenda are REST's.
 */
export function encounterWrites(mapping: EncounterMapping): ResourceWrites<Encounter, EncounterBody> {
  const { toFhir } = mapping
  return {
    rest: { create: 'POST /api/encounters', update: 'PUT /api/encounters/:id' },
    bodySchema: EncounterBody,
    fieldExpressions: {
      patientId: 'Encounter.subject',
      providerId: 'Encounter.participant.individual',
      appointmentId: 'Encounter.appointment',
      encounterDate: 'Encounter.period.start',
      encounterType: 'Encounter.type',
      chiefComplaint: 'Encounter.reasonCode.text',
      status: 'Encounter.status',
    },
    bodyOf: (encounter) => encounterBody(encounter, mapping),
    preview: (body, _current, organizationId) => toFhir(previewRow(body, organizationId)),
    patientOf: (encounter) => referencedId(encounter.subject, 'Patient'),
    create: async (db, actor, body) =>
      toFhir(await requireEncounter(db, actor, await start(db, actor, body))),
    update: async (db, actor, id, body, expected) => toFhir(await change(db, actor, id, body, expected)),
  }
}
