import type { CodeableConcept, Dosage, MedicationStatement } from '@medplum/fhirtypes'
import type { ClinicalRecordRow } from '../../../db/tables/clinical-records.js'
import type { MedicationData } from '../../../schemas/clinical.js'
import { clinicalResourceType, withdrawn } from './clinical-record.js'
import { present, recordResource, reference } from './resource-elements.js'
import type { FhirResourceType } from './resource-type.js'
import { inverse, tokenParameter } from './search-conditions.js'

const RXNORM = 'http://www.nlm.nih.gov/research/umls/rxnorm'
const STATUS_SYSTEM = 'http://hl7.org/fhir/CodeSystem/medication-statement-status'
const SNOMED = 'http://snomed.info/sct'

type Status = MedicationStatement['status']
const STATUS: Record<string, Status> = {
  ACTIVE: 'active',
  COMPLETED: 'completed',
  STOPPED: 'stopped',
  ON_HOLD: 'on-hold',
  ENTERED_IN_ERROR: 'entered-in-error',
}
const STATUS_OF_CODE = inverse(STATUS)

// SNOMED CT route of administration qualifiers (the R4 route-codes example value set's system).
const ROUTES: Record<string, { code: string; display: string; word: string }> = {
  ORAL: { code: '26643006', display: 'Oral route', word: 'oral' },
  SUBLINGUAL: { code: '37839007', display: 'Sublingual route', word: 'sublingual' },
  INTRAVENOUS: { code: '47625008', display: 'Intravenous route', word: 'intravenous' },
  INTRAMUSCULAR: { code: '78421000', display: 'Intramuscular route', word: 'intramuscular' },
  SUBCUTANEOUS: { code: '34206005', display: 'Subcutaneous route', word: 'subcutaneous' },
  TOPICAL: { code: '6064005', display: 'Topical route', word: 'topical' },
  INHALED: { code: '447694001', display: 'Respiratory tract route', word: 'inhaled' },
  RECTAL: { code: '37161004', display: 'Per rectum', word: 'rectal' },
}

/** The record's dosage: a readable text (dose, route, frequency; instructions) and its parts. */
function dosageOf(data: MedicationData): Dosage | undefined {
  const route = data.route ? ROUTES[data.route] : undefined
  const sig = [
    data.dose !== null && data.doseUnit !== null ? `${data.dose} ${data.doseUnit}` : undefined,
    route?.word,
    data.frequency ?? undefined,
  ]
    .filter((part) => part !== undefined)
    .join(' ')
  const text = [sig, data.instructions ?? ''].filter((part) => part !== '').join('; ')
  const routeConcept: CodeableConcept | undefined = route
    ? { coding: [{ system: SNOMED, code: route.code, display: route.display }], text: route.word }
    : undefined
  return present({
    text: text || undefined,
    additionalInstruction: data.instructions ? [{ text: data.instructions }] : undefined,
    timing: data.frequency ? { code: { text: data.frequency } } : undefined,
    route: routeConcept,
    doseAndRate:
      data.dose !== null && data.doseUnit !== null
        ? [{ doseQuantity: { value: data.dose, unit: data.doseUnit } }]
        : undefined,
  })
}

/**
 * A medication record as FHIR R4 MedicationStatement: an entry of the patient's medication list
 * (what the patient takes, from when to when), not an order. RxNorm-coded when a code is stored;
 * the name is always the text.
 */
function toFhirMedicationStatement(row: ClinicalRecordRow): MedicationStatement & { id: string } {
  const data = row.data as MedicationData
  const dosage = dosageOf(data)
  const period = present({ start: data.startDate ?? undefined, end: data.endDate ?? undefined })
  return recordResource('MedicationStatement', row, {
    status: withdrawn(row) ? 'entered-in-error' : (STATUS[data.status] ?? 'unknown'),
    medicationCodeableConcept: {
      coding: data.rxnormCode ? [{ system: RXNORM, code: data.rxnormCode }] : undefined,
      text: data.name,
    },
    subject: reference('Patient', row.patient_id),
    context: reference('Encounter', row.encounter_id),
    effectivePeriod: period,
    dateAsserted: row.recorded_at.toISOString(),
    dosage: dosage ? [dosage] : undefined,
  })
}

/** MedicationStatement: the patients' medication lists. */
export function medicationStatementResource(): FhirResourceType<MedicationStatement> {
  return clinicalResourceType<MedicationStatement>({
    type: 'MedicationStatement',
    kind: 'MEDICATION',
    path: 'medications',
    searchParameters: [
      tokenParameter('status', 'active | completed | stopped | on-hold | entered-in-error', 'status', {
        system: STATUS_SYSTEM,
        ours: STATUS_OF_CODE,
      }),
    ],
    toFhir: toFhirMedicationStatement,
    patientOf: (resource) => resource.subject,
  })
}
