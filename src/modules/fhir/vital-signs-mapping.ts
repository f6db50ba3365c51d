import type {
  CodeableConcept,
  Coding,
  Observation,
  ObservationComponent,
  Quantity,
  Reference,
  Resource,
} from '@medplum/fhirtypes'
import { type TObject, Type } from '@sinclair/typebox'
import type { ClinicalRecordRow } from '../../../db/tables/clinical-records.js'
import type { VitalSignsData, VitalSignsInput } from '../../../schemas/clinical.js'
import { Id } from '../../../schemas/common.js'
import { invalidField } from '../../errors.js'
import { measurementsOf, vitalSigns } from '../clinical/service.js'
import { type ClinicalBody, type ClinicalStatement, clinicalWrites } from './clinical-writes.js'
import { metaOf, reference, withoutUndefined } from './resource-elements.js'
import type { ResourceWrites } from './resource-writes.js'

export const LOINC = 'http://loinc.org'
export const UCUM = 'http://unitsofmeasure.org'
export const OBSERVATION_CATEGORY = 'http://terminology.hl7.org/CodeSystem/observation-category'
const US_CORE = 'http://hl7.org/fhir/us/core/StructureDefinition'
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

/** One measurement a vital-signs record holds, as the US Core profile for it. */
interface Measurement {
  field: Measured
  /** Its Observation's local id where a panel is written with its measurements contained (`#heart-rate`). */
  id: string
  profile: string
  unit: Unit
  /** Its LOINC codes, the first being the one its record is stored and searched by. */
  codes: Coding[]
}

function measurement(field: Measured, id: string, profile: string, unit: Unit, ...codes: Coding[]) {
  return { field, id, profile: `${US_CORE}/${profile}|6.1.0`, unit, codes }
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

// Each: the stored field, its local id when contained, its US Core profile, its unit, its LOINC
// codes. Migration 0035 stores each member under the first code.
const MEASUREMENTS: Measurement[] = [
  measurement('heartRate', 'heart-rate', 'us-core-heart-rate', BEATS_PER_MINUTE, HEART_RATE),
  measurement(
    'respiratoryRate',
    'respiratory-rate',
    'us-core-respiratory-rate',
    BREATHS_PER_MINUTE,
    RESPIRATORY_RATE,
  ),
  measurement(
    'temperatureCelsius',
    'body-temperature',
    'us-core-body-temperature',
    ucum('Cel', '°C'),
    BODY_TEMPERATURE,
  ),
  // SpO2 is measured by pulse oximetry: US Core's profile wants both codes.
  measurement(
    'spo2',
    'oxygen-saturation',
    'us-core-pulse-oximetry',
    ucum('%'),
    PULSE_OXIMETRY,
    OXYGEN_SATURATION,
  ),
  measurement('heightCm', 'body-height', 'us-core-body-height', ucum('cm'), BODY_HEIGHT),
  measurement('weightKg', 'body-weight', 'us-core-body-weight', ucum('kg'), BODY_WEIGHT),
  measurement('bmi', 'bmi', 'us-core-bmi', ucum('kg/m2'), BMI),
  // Pain is no vital sign of US Core's: a simple observation, still filed with the vital signs.
  measurement(
    'painScore',
    'pain-severity',
    'us-core-simple-observation',
    ucum('{score}', 'score'),
    PAIN_SEVERITY,
  ),
]

const BLOOD_PRESSURE = loinc('85354-9', 'Blood pressure panel with all children optional')
const BLOOD_PRESSURE_PROFILE = `${US_CORE}/us-core-blood-pressure|6.1.0`
const SYSTOLIC = loinc('8480-6', 'Systolic blood pressure')
const DIASTOLIC = loinc('8462-4', 'Diastolic blood pressure')
const MM_HG = ucum('mm[Hg]', 'mmHg')

const US_CORE_VITAL_SIGNS = `${US_CORE}/us-core-vital-signs|6.1.0`

/** Every profile a vital signs Observation claims: the panel's and its members'. */
export const VITAL_SIGNS_PROFILES = [
  US_CORE_VITAL_SIGNS,
  BLOOD_PRESSURE_PROFILE,
  ...new Set(MEASUREMENTS.map(({ profile }) => profile)),
]

const codeOf = (coding: Coding) => coding.code as string

/**
 * The code a measurement's record is stored by, for each LOINC code of its Observation.code
 * (pulse oximetry's two codes both find it).
 */
export const MEMBER_CODES: Record<string, string> = {
  ...Object.fromEntries(
    MEASUREMENTS.flatMap(({ codes }) => codes.map((coding) => [codeOf(coding), codeOf(codes[0] as Coding)])),
  ),
  [codeOf(BLOOD_PRESSURE)]: codeOf(BLOOD_PRESSURE),
}

const quantity = (value: number, unit: Unit): Quantity => ({
  value,
  unit: unit.display,
  system: UCUM,
  code: unit.code,
})

function bloodPressureComponent(coding: Coding, value: number | null | undefined): ObservationComponent {
  return value === null || value === undefined
    ? // The blood pressure profile needs both parts; one not taken is said to be absent.
      {
        code: { coding: [coding], text: coding.display },
        dataAbsentReason: { coding: [{ system: DATA_ABSENT, code: 'unknown', display: 'Unknown' }] },
      }
    : { code: { coding: [coding], text: coding.display }, valueQuantity: quantity(value, MM_HG) }
}

type Values = Partial<Record<Measured, number | null>>

/** A measurement's own elements: its profile, code and value (or blood pressure's components). */
interface MeasuredElements {
  /** The code its record is stored by. */
  code: string
  /** Its local id when contained. */
  id: string
  profile: string
  elements: Pick<Observation, 'code' | 'valueQuantity' | 'component'>
}

const concept = (codes: Coding[]): CodeableConcept => ({ coding: codes, text: codes[0]?.display })

/** The measurements `values` hold, in a panel's order, each with its own elements. */
function measuredElements(values: Values): MeasuredElements[] {
  const measured: MeasuredElements[] = []
  const { systolic, diastolic } = values
  if (typeof systolic === 'number' || typeof diastolic === 'number') {
    measured.push({
      code: codeOf(BLOOD_PRESSURE),
      id: 'blood-pressure',
      profile: BLOOD_PRESSURE_PROFILE,
      elements: {
        code: concept([BLOOD_PRESSURE]),
        component: [bloodPressureComponent(SYSTOLIC, systolic), bloodPressureComponent(DIASTOLIC, diastolic)],
      },
    })
  }
  for (const { field, id, profile, codes, unit } of MEASUREMENTS) {
    const value = values[field]
    if (typeof value === 'number') {
      measured.push({
        code: codeOf(codes[0] as Coding),
        id,
        profile,
        elements: { code: concept(codes), valueQuantity: quantity(value, unit) },
      })
    }
  }
  return measured
}

/** What a panel and its measurements share: status, category, patient, encounter, time. */
function sharedElements(row: ClinicalRecordRow, status: Observation['status']) {
  return {
    status,
    category: categoryOf('vital-signs'),
    subject: reference('Patient', row.patient_id),
    ...(row.encounter_id === null ? {} : { encounter: reference('Encounter', row.encounter_id) }),
    effectiveDateTime: row.effective_at.toISOString(),
  }
}

const PANEL_CODE = {
  coding: [
    loinc(
      VITALS_PANEL_CODE,
      'Vital signs, weight, height, head circumference, oxygen saturation and BMI panel',
    ),
  ],
  text: 'Vital signs',
}

const memberReference = (id: number): Reference<Observation> => ({ reference: `Observation/${id}` })

const panelStatus = (row: ClinicalRecordRow) =>
  row.entered_in_error_at
    ? 'entered-in-error'
    : (VITAL_STATUS[(row.data as VitalSignsData).status] ?? 'final')

/**
 * A vital-signs record as a US Core vital signs panel (85353-1): its `hasMember` references the
 * Observation of each measurement it holds (toFhirVitalSign), records of their own that the
 * database keeps with the panel (migration 0035).
 */
export function toFhirVitalSigns(row: ClinicalRecordRow): Observation & { id: string } {
  const memberIds = row.member_ids ?? {}
  const hasMember = measuredElements(row.data as Values).flatMap(({ code }) =>
    memberIds[code] === undefined ? [] : [memberReference(memberIds[code])],
  )
  return {
    resourceType: 'Observation',
    id: String(row.id),
    meta: { ...metaOf(row), profile: [US_CORE_VITAL_SIGNS] },
    ...sharedElements(row, panelStatus(row)),
    code: PANEL_CODE,
    hasMember,
  }
}

/**
 * A vital signs panel as it is written: its measurements contained, each referenced by `hasMember`
 * (`#heart-rate`), since they are created with it. What a write keeps of a panel is checked
 * against this form.
 */
function toWrittenVitalSigns(row: ClinicalRecordRow): Observation & { id: string } {
  const shared = sharedElements(row, panelStatus(row))
  const members = measuredElements(row.data as Values).map(
    ({ id, profile, elements }): Observation => ({
      resourceType: 'Observation',
      id,
      meta: { profile: [profile] },
      ...shared,
      ...elements,
    }),
  )
  return {
    resourceType: 'Observation',
    id: String(row.id),
    meta: { ...metaOf(row), profile: [US_CORE_VITAL_SIGNS] },
    contained: members,
    ...shared,
    code: PANEL_CODE,
    hasMember: members.map((observation) => ({ reference: `#${observation.id}` })),
  }
}

/** One measurement of a vital-signs record (a VITAL_SIGN record) as the Observation of its US Core profile. */
export function toFhirVitalSign(row: ClinicalRecordRow): Observation & { id: string } {
  // Migration 0035 stores a measurement with its values only.
  const [measured] = measuredElements(row.data as Values)
  if (!measured) throw new Error(`Vital sign ${row.id} holds no measurement`)
  const status = row.entered_in_error_at ? 'entered-in-error' : (VITAL_STATUS[row.status] ?? 'final')
  return {
    resourceType: 'Observation',
    id: String(row.id),
    meta: { ...metaOf(row), profile: [measured.profile] },
    ...sharedElements(row, status),
    ...measured.elements,
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
  written: toWrittenVitalSigns,
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

/** A panel's body: its record's, and the measurements stored already that it keeps as they are. */
type VitalSignsBody = ClinicalBody<typeof VitalSignsInput> & { keptMembers?: number[] }

const VITAL_SIGNS_BODY = Type.Object(
  {
    ...(vitalSignsWrites.bodySchema as TObject).properties,
    keptMembers: Type.Optional(Type.Array(Id)),
  },
  { additionalProperties: false },
)

const STORED_REFERENCE = /^Observation\/([1-9][0-9]{0,9})$/

/** The ids of the stored Observations a panel's hasMember references (as a read shows them). */
const storedMembersOf = (panel: Observation): number[] =>
  (panel.hasMember ?? []).flatMap(({ reference }) => {
    const id = STORED_REFERENCE.exec(reference ?? '')?.[1]
    return id === undefined ? [] : [Number(id)]
  })

/** The input fields a stored measurement stands for (BMI none: it is computed). */
function inputOfMeasurement(row: ClinicalRecordRow): Record<string, unknown> {
  const { panelId: _, bmi: __, temperatureCelsius, ...values } = row.data as Values & { panelId: number }
  return {
    ...values,
    ...(typeof temperatureCelsius === 'number'
      ? { temperature: { value: temperatureCelsius, unit: 'C' } }
      : {}),
  }
}

/**
 * The writes of one vital signs panel. Its measurements are given contained (their values), or
 * referenced by hasMember as a read shows them (`Observation/12`: that measurement of the panel,
 * kept as it is); a measurement it no longer holds is removed (its Observation entered in error).
 * A 422 about a measurement names its element in the panel.
 */
export function vitalSignsWritesOf(panel: Observation): ResourceWrites<Observation> {
  const base = vitalSignsWrites as ResourceWrites<Observation, VitalSignsBody>
  const elements = measurementsIn(panel).map(({ field, element }) => [
    `input.${field}`,
    `Observation.${element}`,
  ])
  const kept = storedMembersOf(panel)
  const writes: ResourceWrites<Observation, VitalSignsBody> = {
    ...base,
    bodySchema: VITAL_SIGNS_BODY,
    fieldExpressions: {
      ...base.fieldExpressions,
      ...Object.fromEntries(elements),
      keptMembers: 'Observation.hasMember',
    },
    bodyOf: (resource) => ({
      ...base.bodyOf(resource),
      ...(kept.length > 0 ? { keptMembers: kept } : {}),
    }),
    preview(body, current, organizationId) {
      const { keptMembers = [], ...given } = body
      const keptOnly = keptMembers.length > 0 && measurementsIn(panel).length === 0
      // With only stored measurements, whose values the update reads, the panel's own elements are
      // previewed with a stand-in measurement, which the preview then leaves out.
      const previewed = keptOnly ? { ...given, input: { ...given.input, painScore: 0 } } : given
      const written = base.preview(previewed, undefined, organizationId)
      // Whether a correction changes the record (and so amends it) is the service's to tell, against
      // the record as stored: an update may say either.
      const status =
        current && panel.status === 'amended' && !body.enteredInError ? 'amended' : written.status
      return {
        ...written,
        status,
        contained: keptOnly
          ? undefined
          : (written.contained ?? []).map((member) => ({ ...member, status }) as Observation),
        hasMember: [...(keptOnly ? [] : (written.hasMember ?? [])), ...keptMembers.map(memberReference)],
      }
    },
    async create(db, actor, body) {
      if (body.keptMembers) {
        throw invalidField('keptMembers', 'a new panel holds its measurements contained, not stored ones')
      }
      return base.create(db, actor, body)
    },
    async update(db, actor, id, { keptMembers, ...body }, expected) {
      if (!keptMembers) return base.update(db, actor, id, body, expected)
      const stored = await measurementsOf(db, actor, id)
      const values = keptMembers.map((member) => {
        const row = stored.find((measurement) => measurement.id === member)
        if (!row) throw invalidField('keptMembers', `Observation/${member} is no measurement of this panel`)
        return inputOfMeasurement(row)
      })
      const input = { ...Object.assign({}, ...values), ...body.input }
      return base.update(db, actor, id, { ...body, input }, expected)
    },
  }
  return writes as ResourceWrites<Observation>
}
