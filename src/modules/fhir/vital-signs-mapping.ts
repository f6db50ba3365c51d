import type {
  CodeableConcept,
  Coding,
  Observation,
  ObservationComponent,
  Quantity,
  Resource,
} from '@medplum/fhirtypes'
import type { ClinicalRecordRow } from '../../../db/tables/clinical-records.js'
import type { VitalSignsData } from '../../../schemas/clinical.js'
import { vitalSigns } from '../clinical/service.js'
import { type ClinicalStatement, clinicalWrites } from './clinical-writes.js'
import { metaOf, reference, withoutUndefined } from './resource-elements.js'
import type { ResourceWrites } from './resource-writes.js'

export const LOINC = 'http://loinc.org'
export const UCUM = 'http://unitsofmeasure.org'
export const OBSERVATION_CATEGORY = 'http://terminology.hl7.org/CodeSystem/observation-category'
const PROFILE = 'http://hl7.org/fhir/StructureDefinition'
const DATA_ABSENT = 'http://terminology.hl7.org/CodeSystem/data-absent-reason'

export const VITALS_PANEL_CODE = '85353-1'

export const categoryOf = (code: 'vital-signs' | 'laboratory'): CodeableConcept[] => [
  {
    coding: [
      { system: OBSERVATION_CATEGORY, code, display: code === 'laboratory' ? 'Laboratory' : 'Vital Signs' },
    ],
  },
]

const loinc = (code: string, display: string): Coding => ({ system: LOINC, code, display })

/** FINAL, AMENDED (any correction of vital signs) and ENTERED_IN_ERROR as Observation.status. */
const VITAL_STATUS: Record<string, Observation['status']> = {
  FINAL: 'final',
  AMENDED: 'amended',
  ENTERED_IN_ERROR: 'entered-in-error',
}

type Measured = keyof Omit<VitalSignsData, 'status'>

/** A UCUM unit: its code, and how it reads. */
interface Unit {
  code: string
  display: string
}

const ucum = (code: string, display = code): Unit => ({ code, display })
const BEATS_PER_MINUTE = ucum('/min', 'beats/minute')
const BREATHS_PER_MINUTE = ucum('/min', 'breaths/minute')

/** One measurement a vital-signs record holds, as the FHIR vital-signs profile for it. */
interface Measurement {
  field: Measured
  /** The contained Observation's local id (`#heart-rate`). */
  id: string
  profile: string
  unit: Unit
  codes: Coding[]
}

function measurement(field: Measured, id: string, profile: string, unit: Unit, ...codes: Coding[]) {
  return { field, id, profile, unit, codes }
}

const HEART_RATE = loinc('8867-4', 'Heart rate')
const RESPIRATORY_RATE = loinc('9279-1', 'Respiratory rate')
const BODY_TEMPERATURE = loinc('8310-5', 'Body temperature')
const OXYGEN_SATURATION = loinc('2708-6', 'Oxygen saturation in Arterial blood')
const PULSE_OXIMETRY = loinc('59408-5', 'Oxygen saturation in Arterial blood by Pulse oximetry')
const BODY_HEIGHT = loinc('8302-2', 'Body height')
const BODY_WEIGHT = loinc('29463-7', 'Body weight')
const BMI = loinc('39156-5', 'Body mass index (BMI) [Ratio]')
const PAIN_SEVERITY = loinc('72514-3', 'Pain severity - 0-10 verbal numeric rating [Score] - Reported')

// Each: the stored field, the contained Observation's id, its R4 profile, its unit, its LOINC codes.
const MEASUREMENTS: Measurement[] = [
  measurement('heartRate', 'heart-rate', 'heartrate', BEATS_PER_MINUTE, HEART_RATE),
  measurement('respiratoryRate', 'respiratory-rate', 'resprate', BREATHS_PER_MINUTE, RESPIRATORY_RATE),
  measurement('temperatureCelsius', 'body-temperature', 'bodytemp', ucum('Cel', '°C'), BODY_TEMPERATURE),
  // SpO2 is measured by pulse oximetry: 59408-5 says so, 2708-6 is the code the R4 profile fixes.
  measurement('spo2', 'oxygen-saturation', 'oxygensat', ucum('%'), OXYGEN_SATURATION, PULSE_OXIMETRY),
  measurement('heightCm', 'body-height', 'bodyheight', ucum('cm'), BODY_HEIGHT),
  measurement('weightKg', 'body-weight', 'bodyweight', ucum('kg'), BODY_WEIGHT),
  measurement('bmi', 'bmi', 'bmi', ucum('kg/m2'), BMI),
  // No R4 profile of its own: the generic vital-signs one (its code binding is extensible).
  measurement('painScore', 'pain-severity', 'vitalsigns', ucum('{score}', 'score'), PAIN_SEVERITY),
]

const BLOOD_PRESSURE = loinc('85354-9', 'Blood pressure panel with all children optional')
const SYSTOLIC = loinc('8480-6', 'Systolic blood pressure')
const DIASTOLIC = loinc('8462-4', 'Diastolic blood pressure')
const MM_HG = ucum('mm[Hg]', 'mmHg')

/**
 * The stored fields a LOINC code of a contained measurement stands for (the blood pressure panel
 * and its two parts all name the blood pressure member).
 */
export const MEASUREMENT_FIELDS: Record<string, Measured[]> = {
  ...Object.fromEntries(
    MEASUREMENTS.flatMap(({ field, codes }) => codes.map((coding) => [coding.code as string, [field]])),
  ),
  [BLOOD_PRESSURE.code as string]: ['systolic', 'diastolic'],
  [SYSTOLIC.code as string]: ['systolic'],
  [DIASTOLIC.code as string]: ['diastolic'],
}

const quantity = (value: number, unit: Unit): Quantity => ({
  value,
  unit: unit.display,
  system: UCUM,
  code: unit.code,
})

function bloodPressureComponent(coding: Coding, value: number | null): ObservationComponent {
  return value === null
    ? // The R4 blood pressure profile needs both parts; one not taken is said to be absent.
      {
        code: { coding: [coding], text: coding.display },
        dataAbsentReason: { coding: [{ system: DATA_ABSENT, code: 'unknown', display: 'Unknown' }] },
      }
    : { code: { coding: [coding], text: coding.display }, valueQuantity: quantity(value, MM_HG) }
}

/**
 * A vital-signs record as the R4 vital signs panel (85353-1, profile vitalspanel): one resource with
 * the record's id, version and status, whose `hasMember` points at one contained Observation per
 * measurement, each following its R4 vital-signs profile (heart rate, blood pressure, …). The
 * measurements have no ids of their own in this service, so they cannot be separate resources that
 * read back; contained resources are FHIR's way for parts without an identity of their own.
 */
export function toFhirVitalSigns(row: ClinicalRecordRow): Observation & { id: string } {
  const data = row.data as VitalSignsData
  const status = row.entered_in_error_at ? 'entered-in-error' : (VITAL_STATUS[data.status] ?? 'final')
  const shared = {
    status,
    category: categoryOf('vital-signs'),
    subject: reference('Patient', row.patient_id),
    ...(row.encounter_id === null ? {} : { encounter: reference('Encounter', row.encounter_id) }),
    effectiveDateTime: row.effective_at.toISOString(),
  }
  const member = (id: string, profile: string, codes: Coding[], rest: Partial<Observation>): Observation => ({
    resourceType: 'Observation',
    id,
    meta: { profile: [`${PROFILE}/${profile}`] },
    ...shared,
    code: { coding: codes, text: codes[0]?.display },
    ...rest,
  })
  const members: Observation[] = []
  if (data.systolic !== null || data.diastolic !== null) {
    members.push(
      member('blood-pressure', 'bp', [BLOOD_PRESSURE], {
        component: [
          bloodPressureComponent(SYSTOLIC, data.systolic),
          bloodPressureComponent(DIASTOLIC, data.diastolic),
        ],
      }),
    )
  }
  for (const { field, id, profile, codes, unit } of MEASUREMENTS) {
    const value = data[field]
    if (value !== null && value !== undefined) {
      members.push(member(id, profile, codes, { valueQuantity: quantity(value, unit) }))
    }
  }
  return {
    resourceType: 'Observation',
    id: String(row.id),
    meta: { ...metaOf(row), profile: [`${PROFILE}/vitalspanel`] },
    contained: members,
    ...shared,
    code: {
      coding: [
        loinc(
          VITALS_PANEL_CODE,
          'Vital signs, weight, height, head circumference, oxygen saturation and BMI panel',
        ),
      ],
      text: 'Vital signs',
    },
    hasMember: members.map((observation) => ({ reference: `#${observation.id}` })),
  }
}

/** Whether a concept holds one of the LOINC codes. */
const hasCode = (concept: CodeableConcept | undefined, codes: Coding[]) =>
  concept?.coding?.some(
    (coding) => coding.system === LOINC && codes.some(({ code }) => code === coding.code),
  ) === true

/** A measurement a panel shows: the REST input field it stands for, its value, and where it stands. */
interface Shown {
  field: string
  value: unknown
  /** Its element in the panel (`contained[2].valueQuantity`). */
  element: string
}

/**
 * The measurements a panel's contained Observations show, each found by its LOINC codes, as the
 * REST input fields they stand for. BMI stands for none: it is computed from height and weight.
 */
function measurementsIn(panel: Observation): Shown[] {
  const contained = panel.contained ?? []
  const at = (codes: Coding[]) =>
    contained.findIndex(
      (resource: Resource) => resource.resourceType === 'Observation' && hasCode(resource.code, codes),
    )
  const shown: Shown[] = []
  const pressure = at([BLOOD_PRESSURE])
  const components = (contained[pressure] as Observation | undefined)?.component ?? []
  for (const [field, coding] of [
    ['systolic', SYSTOLIC],
    ['diastolic', DIASTOLIC],
  ] as const) {
    const part = components.findIndex((component) => hasCode(component.code, [coding]))
    const value = components[part]?.valueQuantity?.value
    if (value !== undefined) {
      shown.push({ field, value, element: `contained[${pressure}].component[${part}].valueQuantity` })
    }
  }
  for (const { field, codes } of MEASUREMENTS) {
    const index = at(codes)
    const quantity = (contained[index] as Observation | undefined)?.valueQuantity
    if (field === 'bmi' || quantity?.value === undefined) continue
    const element = `contained[${index}].valueQuantity`
    shown.push(
      field === 'temperatureCelsius'
        ? {
            field: 'temperature',
            value: { value: quantity.value, unit: quantity.code === '[degF]' ? 'F' : 'C' },
            element,
          }
        : { field, value: quantity.value, element },
    )
  }
  return shown
}

/** What a vital signs panel says of its record (toFhirVitalSigns' elements): when measured, and what. */
function vitalSignsStatement(panel: Observation): ClinicalStatement {
  return {
    patient: panel.subject,
    encounter: panel.encounter,
    recordedAt: undefined,
    enteredInError: panel.status === 'entered-in-error',
    input: withoutUndefined({
      recordedAt: panel.effectiveDateTime,
      ...Object.fromEntries(measurementsIn(panel).map(({ field, value }) => [field, value])),
    }),
  }
}

/**
 * Vital signs written as vital signs panels, through the vital signs' REST routes. A measurement's
 * element is where the panel written holds it: vitalSignsWritesOf.
 */
export const vitalSignsWrites = clinicalWrites({
  type: 'Observation',
  kind: vitalSigns,
  toFhir: toFhirVitalSigns,
  statementOf: vitalSignsStatement,
  elements: {
    patientId: 'subject',
    enteredInError: 'status',
    'input.encounterId': 'encounter',
    'input.recordedAt': 'effectiveDateTime',
  },
  // A panel shows everything its record holds.
  unseen: () => ({}),
})

/** The writes of one vital signs panel: a 422 about a measurement names its element in the panel. */
export function vitalSignsWritesOf(panel: Observation): ResourceWrites<Observation> {
  const elements = measurementsIn(panel).map(({ field, element }) => [
    `input.${field}`,
    `Observation.${element}`,
  ])
  return {
    ...vitalSignsWrites,
    fieldExpressions: { ...vitalSignsWrites.fieldExpressions, ...Object.fromEntries(elements) },
  }
}
