import type { CodeableConcept, Observation, ObservationReferenceRange, Quantity } from '@medplum/fhirtypes'
import type { ClinicalRecordRow } from '../../../db/tables/clinical-records.js'
import type { LabResultData } from '../../../schemas/clinical.js'
import { labResults } from '../clinical/service.js'
import { type ClinicalStatement, clinicalWrites, codeIn, oursOf } from './clinical-writes.js'
import { claiming, present, recordResource, reference, withoutUndefined } from './resource-elements.js'
import { inverse } from './search-conditions.js'
import { UCUM_COMMON_UNITS } from './ucum-common-units.js'
import { US_CORE_OBSERVATION_LAB } from './us-core-profiles.js'
import { categoryOf, LOINC, UCUM } from './vital-signs-mapping.js'

const INTERPRETATION = 'http://terminology.hl7.org/CodeSystem/v3-ObservationInterpretation'

const LAB_STATUS: Record<string, Observation['status']> = {
  PRELIMINARY: 'preliminary',
  FINAL: 'final',
  CORRECTED: 'corrected',
  ENTERED_IN_ERROR: 'entered-in-error',
}
/** Our lab statuses for each FHIR status code (of an Observation or a DiagnosticReport: the same codes). */
export const LAB_STATUS_OF_CODE = inverse(LAB_STATUS)

/** The status of a lab result, as its Observation and its DiagnosticReport show it (the codes are the same). */
export const labStatusOf = (row: ClinicalRecordRow): NonNullable<Observation['status']> =>
  row.entered_in_error_at ? 'entered-in-error' : (LAB_STATUS[(row.data as LabResultData).status] ?? 'unknown')

// A critical result is HH, LL or AA by its value against its range (interpretationOf).
const INTERPRETATION_OF_CODE: Record<string, string[]> = {
  N: ['NORMAL'],
  L: ['LOW'],
  H: ['HIGH'],
  HH: ['CRITICAL'],
  LL: ['CRITICAL'],
  AA: ['CRITICAL'],
}

/**
 * Units are free text in the REST API. Only a valid UCUM unit, one of HL7's common UCUM units as
 * written (case matters: `mg/dL`, `10*3/uL`), is sent with the UCUM system and code; any other is
 * sent as display text alone, since a wrong UCUM code is worse than none to a system that computes
 * with it.
 */
const quantityOf = (value: number, unit: string | null): Quantity =>
  unit === null
    ? { value }
    : UCUM_COMMON_UNITS.has(unit)
      ? { value, unit, system: UCUM, code: unit }
      : { value, unit }

function interpretationOf(data: LabResultData): CodeableConcept[] | undefined {
  const coded = (code: string, display: string) => [{ coding: [{ system: INTERPRETATION, code, display }] }]
  switch (data.interpretation) {
    case 'NORMAL':
      return coded('N', 'Normal')
    case 'LOW':
      return coded('L', 'Low')
    case 'HIGH':
      return coded('H', 'High')
    case 'CRITICAL': {
      // The direction of a critical result is known only from a numeric value against its range.
      const { low, high } = data.referenceRange ?? {}
      if (typeof data.value === 'number' && high != null && data.value > high)
        return coded('HH', 'Critical high')
      if (typeof data.value === 'number' && low != null && data.value < low)
        return coded('LL', 'Critical low')
      return coded('AA', 'Critical abnormal')
    }
    default:
      return undefined
  }
}

/** A lab result as a US Core laboratory result Observation: LOINC code, value, range, interpretation. */
export function toFhirLabResult(row: ClinicalRecordRow): Observation & { id: string } {
  const data = row.data as LabResultData
  const range = data.referenceRange
  const referenceRange = range
    ? present<ObservationReferenceRange>({
        low: range.low === null ? undefined : quantityOf(range.low, data.unit),
        high: range.high === null ? undefined : quantityOf(range.high, data.unit),
        text: range.text ?? undefined,
      })
    : undefined
  const observation = recordResource<Observation>('Observation', row, {
    status: labStatusOf(row),
    category: categoryOf('laboratory'),
    code: { coding: [{ system: LOINC, code: data.testCode }], text: data.testName },
    subject: reference('Patient', row.patient_id),
    encounter: reference('Encounter', row.encounter_id),
    // The clinically relevant time of a lab result is when the specimen was taken.
    effectiveDateTime: data.specimenCollectedAt ?? data.resultedAt,
    issued: data.resultedAt,
    valueQuantity: typeof data.value === 'number' ? quantityOf(data.value, data.unit) : undefined,
    valueString: typeof data.value === 'string' ? data.value : undefined,
    interpretation: interpretationOf(data),
    referenceRange: referenceRange ? [referenceRange] : undefined,
  })
  return claiming(US_CORE_OBSERVATION_LAB, observation)
}

const sameMoment = (a: string | undefined | null, b: string | undefined) =>
  a != null && b !== undefined && Date.parse(a) === Date.parse(b)

/**
 * What a laboratory Observation says of its lab result: the elements toFhirLabResult writes. The
 * unit is the value's, else its range's; the effective time is the specimen's collection unless
 * it is the time resulted (`issued`), which the read shows as both.
 */
function labResultStatement(observation: Observation): ClinicalStatement {
  const quantity = observation.valueQuantity
  const [range] = observation.referenceRange ?? []
  const unitShown = quantity ?? range?.low ?? range?.high
  const enteredInError = observation.status === 'entered-in-error'
  const { effectiveDateTime, issued } = observation
  return {
    patient: observation.subject,
    encounter: observation.encounter,
    recordedAt: undefined,
    enteredInError,
    input: withoutUndefined({
      testCode: codeIn(observation.code, LOINC),
      testName: observation.code?.text,
      value: quantity ? quantity.value : observation.valueString,
      unit: unitShown?.unit ?? unitShown?.code,
      referenceRange:
        range && withoutUndefined({ low: range.low?.value, high: range.high?.value, text: range.text }),
      interpretation: oursOf(INTERPRETATION_OF_CODE, codeIn(observation.interpretation?.[0], INTERPRETATION)),
      status: enteredInError ? undefined : oursOf(LAB_STATUS_OF_CODE, observation.status),
      specimenCollectedAt: sameMoment(effectiveDateTime, issued) ? undefined : effectiveDateTime,
      resultedAt: issued,
    }),
  }
}

/** Lab results written as laboratory Observations, through the lab results' REST routes. */
export const labResultWrites = clinicalWrites({
  type: 'Observation',
  kind: labResults,
  toFhir: toFhirLabResult,
  statementOf: labResultStatement,
  elements: {
    patientId: 'subject',
    enteredInError: 'status',
    'input.encounterId': 'encounter',
    'input.testCode': 'code.coding',
    'input.testName': 'code.text',
    'input.value': 'value',
    'input.unit': 'valueQuantity.unit',
    'input.referenceRange': 'referenceRange',
    'input.interpretation': 'interpretation',
    'input.status': 'status',
    'input.specimenCollectedAt': 'effectiveDateTime',
    'input.resultedAt': 'issued',
  },
  unseen: (data, sent) => {
    const { low, high, text } = data.referenceRange ?? {}
    return {
      // A text result shows its unit only with a bound of its range.
      ...(sent.unit === undefined &&
      typeof sent.value === 'string' &&
      sent.referenceRange?.low === undefined &&
      sent.referenceRange?.high === undefined
        ? { unit: data.unit ?? undefined }
        : {}),
      // A range of neither bounds nor text is shown as none.
      ...(sent.referenceRange === undefined &&
      data.referenceRange &&
      low == null &&
      high == null &&
      text == null
        ? { referenceRange: {} }
        : {}),
      ...(sent.specimenCollectedAt === undefined && sameMoment(data.specimenCollectedAt, sent.resultedAt)
        ? { specimenCollectedAt: data.specimenCollectedAt ?? undefined }
        : {}),
    }
  },
})
