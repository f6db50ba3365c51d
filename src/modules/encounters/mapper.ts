import type { EncounterAddendumRow } from '../../../db/tables/encounter-addenda.js'
import type { EncounterRow } from '../../../db/tables/encounters.js'
import type { Encounter, UpdateEncounterBody } from '../../../schemas/encounters.js'
import type { EventData } from '../../../schemas/events.js'

/** The API's encounter from a row and its addenda; only what the response schema declares is sent. */
export function toEncounter(row: EncounterRow, addenda: readonly EncounterAddendumRow[]): Encounter {
  return {
    id: row.id,
    patientId: row.patient_id,
    providerId: row.provider_id,
    appointmentId: row.appointment_id,
    encounterDate: row.encounter_date,
    encounterType: row.encounter_type as Encounter['encounterType'],
    chiefComplaint: row.chief_complaint,
    soapNote: {
      subjective: row.subjective,
      objective: row.objective,
      assessment: { text: row.assessment, diagnoses: row.diagnoses },
      plan: row.plan,
    },
    status: row.status as Encounter['status'],
    signedBy: row.signed_by,
    signedAt: row.signed_at?.toISOString() ?? null,
    addenda: addenda
      .filter((addendum) => addendum.encounter_id === row.id)
      .map((addendum) => ({
        id: addendum.id,
        text: addendum.text,
        signedBy: addendum.signed_by,
        signedAt: addendum.signed_at.toISOString(),
      })),
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
    version: row.version,
  }
}

/** Row columns of the note: everything a create or full-replace body carries besides references. */
export function noteColumns(body: UpdateEncounterBody) {
  const note = body.soapNote
  return {
    encounter_date: body.encounterDate,
    encounter_type: body.encounterType,
    chief_complaint: body.chiefComplaint ?? null,
    subjective: note?.subjective ?? null,
    objective: note?.objective ?? null,
    assessment: note?.assessment?.text ?? null,
    diagnoses: JSON.stringify(note?.assessment?.diagnoses ?? []),
    plan: note?.plan ?? null,
  }
}

export function toEncounterCreatedData(row: EncounterRow): EventData<'encounter.created'> {
  return {
    id: row.id,
    patientId: row.patient_id,
    providerId: row.provider_id,
    appointmentId: row.appointment_id,
    encounterDate: row.encounter_date,
    encounterType: row.encounter_type as Encounter['encounterType'],
    status: row.status as Encounter['status'],
  }
}
