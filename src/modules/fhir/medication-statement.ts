import type { MedicationStatement } from '@medplum/fhirtypes'
import type { ClinicalRecordRow } from '../../../db/tables/clinical-records.js'
import type { MedicationData } from '../../../schemas/clinical.js'
import { medications } from '../clinical/service.js'
import { clinicalResourceType } from './clinical-record.js'
import { type ClinicalStatement, clinicalWrites } from './clinical-writes.js'
import {
  dosageOf,
  MEDICATION_STATUS_CODES,
  MEDICATION_STATUS_OF_CODE,
  medicationConcept,
  medicationElements,
  medicationInputOf,
  medicationStatusOf,
  takenPeriod,
  unseenRoute,
} from './medication-mapping.js'
import { recordResource, reference } from './resource-elements.js'
import type { FhirResourceType } from './resource-type.js'
import { tokenParameter } from './search-conditions.js'

const STATUS_SYSTEM = 'http://hl7.org/fhir/CodeSystem/medication-statement-status'

/**
 * A medication record as FHIR R4 MedicationStatement: an entry of the patient's medication list
 * (what the patient takes, from when to when), not an order.
 */
function toFhirMedicationStatement(row: ClinicalRecordRow): MedicationStatement & { id: string } {
  const data = row.data as MedicationData
  const dosage = dosageOf(data)
  return recordResource('MedicationStatement', row, {
    status: medicationStatusOf(row),
    medicationCodeableConcept: medicationConcept(data),
    subject: reference('Patient', row.patient_id),
    context: reference('Encounter', row.encounter_id),
    effectivePeriod: takenPeriod(data),
    dateAsserted: row.recorded_at.toISOString(),
    dosage: dosage ? [dosage] : undefined,
  })
}

/** What a MedicationStatement says of its record: the elements toFhirMedicationStatement writes. */
function medicationStatement(statement: MedicationStatement): ClinicalStatement {
  return {
    patient: statement.subject,
    encounter: statement.context,
    recordedAt: statement.dateAsserted,
    enteredInError: statement.status === 'entered-in-error',
    input: medicationInputOf({
      medication: statement.medicationCodeableConcept,
      dosage: statement.dosage?.[0],
      period: statement.effectivePeriod,
      status: statement.status,
    }),
  }
}

const medicationWrites = clinicalWrites({
  type: 'MedicationStatement',
  kind: medications,
  toFhir: toFhirMedicationStatement,
  statementOf: medicationStatement,
  elements: {
    patientId: 'subject',
    recordedAt: 'dateAsserted',
    enteredInError: 'status',
    'input.encounterId': 'context',
    ...medicationElements('dosage', 'effectivePeriod'),
  },
  // The prescriber is not shown (MedicationStatement has no place for who prescribed).
  unseen: (data, sent) => ({ prescriberId: data.prescriberId, ...unseenRoute(data, sent) }),
})

/** MedicationStatement: the patients' medication lists. */
export function medicationStatementResource(): FhirResourceType<MedicationStatement> {
  return clinicalResourceType<MedicationStatement>({
    type: 'MedicationStatement',
    kind: 'MEDICATION',
    path: 'medications',
    searchParameters: [
      tokenParameter('status', MEDICATION_STATUS_CODES, 'status', {
        system: STATUS_SYSTEM,
        ours: MEDICATION_STATUS_OF_CODE,
      }),
    ],
    toFhir: toFhirMedicationStatement,
    patientOf: (resource) => resource.subject,
    writes: medicationWrites,
  })
}
