import type { Static, TObject } from '@sinclair/typebox'
import type { ClinicalRecordRow } from '../../../db/tables/clinical-records.js'
import type { RecordFields } from '../../../schemas/clinical.js'

type Common = { [K in keyof typeof RecordFields]: Static<(typeof RecordFields)[K]> }
export type ClinicalRecord<D extends TObject> = Common & Static<D>

/** The API's record from a row: the kind's data, with the common fields (which it cannot override). */
export function toRecord<D extends TObject>(row: ClinicalRecordRow): ClinicalRecord<D> {
  return {
    ...(row.data as Static<D>),
    id: row.id,
    patientId: row.patient_id,
    encounterId: row.encounter_id,
    recordedBy: row.recorded_by,
    recordedAt: row.recorded_at.toISOString(),
    updatedBy: row.updated_by,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
    version: row.version,
    enteredInError:
      row.entered_in_error_at && row.entered_in_error_by
        ? {
            by: row.entered_in_error_by,
            at: row.entered_in_error_at.toISOString(),
            reason: row.entered_in_error_reason ?? '',
          }
        : null,
  }
}
