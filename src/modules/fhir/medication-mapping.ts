import type { CodeableConcept, Dosage, Period } from '@medplum/fhirtypes'
import type { ClinicalRecordRow } from '../../../db/tables/clinical-records.js'
import type { MedicationData, MedicationInput } from '../../../schemas/clinical.js'
import { withdrawn } from './clinical-record.js'
import { codeIn, oursOf } from './clinical-writes.js'
import { present, withoutUndefined } from './resource-elements.js'
import { inverse } from './search-conditions.js'

// A medication record as FHIR, whichever resource shows it (MedicationStatement, MedicationRequest):
// the medication, its dosage and its status, read and written the same way by both.

const RXNORM = 'http://www.nlm.nih.gov/research/umls/rxnorm'
const SNOMED = 'http://snomed.info/sct'

// The codes MedicationStatement's and MedicationRequest's status value sets both have.
const STATUS: Record<string, 'active' | 'completed' | 'stopped' | 'on-hold' | 'entered-in-error'> = {
  ACTIVE: 'active',
  COMPLETED: 'completed',
  STOPPED: 'stopped',
  ON_HOLD: 'on-hold',
  ENTERED_IN_ERROR: 'entered-in-error',
}
export const MEDICATION_STATUS_OF_CODE = inverse(STATUS)
export const MEDICATION_STATUS_CODES = 'active | completed | stopped | on-hold | entered-in-error'

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

/** The record's status code: entered-in-error once withdrawn (its old status is gone). */
export const medicationStatusOf = (row: ClinicalRecordRow) =>
  withdrawn(row) ? 'entered-in-error' : (STATUS[(row.data as MedicationData).status] ?? 'unknown')

/** The medication: RxNorm-coded when a code is stored; the name is always the text. */
export const medicationConcept = (data: MedicationData): CodeableConcept => ({
  coding: data.rxnormCode ? [{ system: RXNORM, code: data.rxnormCode }] : undefined,
  text: data.name,
})

/** The period the patient takes the medication in (start and end dates), if the record gives one. */
export const takenPeriod = (data: MedicationData): Period | undefined =>
  present({ start: data.startDate ?? undefined, end: data.endDate ?? undefined })

/**
 * The record's dosage: a readable text (dose, route, frequency; instructions) and its parts;
 * `bounds`, the period its timing runs in, where the resource has no other place for it.
 */
export function dosageOf(data: MedicationData, bounds?: Period): Dosage | undefined {
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
    timing: present({
      code: data.frequency ? { text: data.frequency } : undefined,
      repeat: bounds ? { boundsPeriod: bounds } : undefined,
    }),
    route: routeConcept,
    doseAndRate:
      data.dose !== null && data.doseUnit !== null
        ? [{ doseQuantity: { value: data.dose, unit: data.doseUnit } }]
        : undefined,
  })
}

/** The dosage but for the bounds of its timing (the period taken, read apart). */
function withoutBounds(dosage: Dosage): Dosage {
  if (!dosage.timing?.repeat?.boundsPeriod) return dosage
  const { boundsPeriod: _, ...repeat } = dosage.timing.repeat
  return withoutUndefined({ ...dosage, timing: present({ ...dosage.timing, repeat: present(repeat) }) })
}

/**
 * The record's instructions: the additional instruction, or a dosage given as text alone (then its
 * text), whatever bounds its timing has.
 */
function instructionsOf(dosage: Dosage | undefined): string | undefined {
  if (dosage?.additionalInstruction) return dosage.additionalInstruction[0]?.text
  if (dosage === undefined) return undefined
  const said = withoutBounds(dosage)
  return Object.keys(said).every((name) => name === 'text') ? said.text : undefined
}

/** What a resource's medication, dosage, period and status say of the record: the input fields the mapping writes. */
export function medicationInputOf(said: {
  medication: CodeableConcept | undefined
  dosage: Dosage | undefined
  period: Period | undefined
  status: string | undefined
}): Partial<MedicationInput> {
  const { medication, dosage, period, status } = said
  const dose = dosage?.doseAndRate?.[0]?.doseQuantity
  return withoutUndefined({
    name: medication?.text,
    rxnormCode: codeIn(medication, RXNORM),
    dose: dose?.value,
    doseUnit: dose?.unit,
    route: oursOf(ROUTE_OF_CODE, codeIn(dosage?.route, SNOMED)) as MedicationInput['route'],
    frequency: dosage?.timing?.code?.text,
    startDate: period?.start,
    endDate: period?.end,
    status: (status === 'entered-in-error' ? undefined : oursOf(MEDICATION_STATUS_OF_CODE, status)) as
      | MedicationInput['status']
      | undefined,
    instructions: instructionsOf(dosage),
  })
}

/** The elements of the input fields medicationInputOf reads, under the resource's dosage and period elements. */
export const medicationElements = (dosage: string, period: string) =>
  ({
    'input.name': 'medicationCodeableConcept.text',
    'input.rxnormCode': 'medicationCodeableConcept.coding',
    'input.dose': `${dosage}.doseAndRate.doseQuantity`,
    'input.doseUnit': `${dosage}.doseAndRate.doseQuantity`,
    'input.route': `${dosage}.route`,
    'input.frequency': `${dosage}.timing.code.text`,
    'input.startDate': `${period}.start`,
    'input.endDate': `${period}.end`,
    'input.status': 'status',
    'input.instructions': `${dosage}.additionalInstruction`,
  }) as const

/** A route of no SNOMED CT code (OTHER) is not shown: an update that gives no route keeps it. */
export const unseenRoute = (data: MedicationData, sent: Partial<MedicationInput>) =>
  sent.route === undefined && data.route === 'OTHER' ? { route: data.route } : {}
