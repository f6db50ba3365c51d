import type { CodeableConcept, Dosage, MedicationStatement } from '@medplum/fhirtypes'
import type { ClinicalRecordRow } from '../../../db/tables/clinical-records.js'
import type { MedicationData } from '../../../schemas/clinical.js'
import { medications } from '../clinical/service.js'
import { clinicalResourceType, withdrawn } from './clinical-record.js'
import { type ClinicalStatement, clinicalWrites, codeIn, oursOf } from './clinical-writes.js'
import { present, recordResource, reference, withoutUndefined } from './resource-elements.js'
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
const ROUTE_OF_CODE = inverse(
  Object.fromEntries(Object.entries(ROUTES).map(([ours, { code }]) => [ours, code])),
)

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

/** The record's instructions: the additional instruction, or a dosage given as text alone (then its text). */
function instructionsOf(dosage: Dosage | undefined): string | undefined {
  if (dosage?.additionalInstruction) return dosage.additionalInstruction[0]?.text
  return dosage && Object.keys(dosage).every((name) => name === 'text') ? dosage.text : undefined
}

/** What a MedicationStatement says of its record: the elements toFhirMedicationStatement writes. */
function medicationStatement(statement: MedicationStatement): ClinicalStatement {
  const dosage = statement.dosage?.[0]
  const dose = dosage?.doseAndRate?.[0]?.doseQuantity
  const enteredInError = statement.status === 'entered-in-error'
  return {
    patient: statement.subject,
    encounter: statement.context,
    recordedAt: statement.dateAsserted,
    enteredInError,
    input: withoutUndefined({
      name: statement.medicationCodeableConcept?.text,
      rxnormCode: codeIn(statement.medicationCodeableConcept, RXNORM),
      dose: dose?.value,
      doseUnit: dose?.unit,
      route: oursOf(ROUTE_OF_CODE, codeIn(dosage?.route, SNOMED)),
      frequency: dosage?.timing?.code?.text,
      startDate: statement.effectivePeriod?.start,
      endDate: statement.effectivePeriod?.end,
      status: enteredInError ? undefined : oursOf(STATUS_OF_CODE, statement.status),
      instructions: instructionsOf(dosage),
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
    'input.name': 'medicationCodeableConcept.text',
    'input.rxnormCode': 'medicationCodeableConcept.coding',
    'input.dose': 'dosage.doseAndRate.doseQuantity',
    'input.doseUnit': 'dosage.doseAndRate.doseQuantity',
    'input.route': 'dosage.route',
    'input.frequency': 'dosage.timing.code.text',
    'input.startDate': 'effectivePeriod.start',
    'input.endDate': 'effectivePeriod.end',
    'input.status': 'status',
    'input.instructions': 'dosage.additionalInstruction',
  },
  // The prescriber is not shown, nor a route of no SNOMED CT code (OTHER).
  unseen: (data, sent) => ({
    prescriberId: data.prescriberId,
    ...(sent.route === undefined && data.route === 'OTHER' ? { route: data.route } : {}),
  }),
})

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
    writes: medicationWrites,
  })
}
