import { type Static, type TObject, type TProperties, Type } from '@sinclair/typebox'
import {
  DateString,
  Envelope,
  Id,
  ListQuery,
  MergePatch,
  Named,
  Nullable,
  Page,
  StringEnum,
  Text,
  Timestamp,
} from './common.js'

const literals = <const T extends readonly string[]>(values: T, description?: string) =>
  StringEnum(values, description ? { description } : {})
const strict = { additionalProperties: false } as const
const Optional = <T extends Parameters<typeof Nullable>[0]>(schema: T) => Type.Optional(Nullable(schema))

export const ENTERED_IN_ERROR = 'ENTERED_IN_ERROR'

/** Every kind may point at the encounter it was recorded in (one of the same patient's). */
const encounterLink = {
  encounterId: Type.Optional(
    Nullable(Type.Integer({ minimum: 1, description: 'An encounter of the same patient' })),
  ),
}
const SEVERITIES = ['MILD', 'MODERATE', 'SEVERE'] as const

/** Fields every clinical record has, whatever its kind. */
export const RecordFields = {
  id: Id,
  patientId: Id,
  encounterId: Nullable(Id),
  recordedBy: Id,
  recordedAt: Timestamp,
  updatedBy: Id,
  createdAt: Timestamp,
  updatedAt: Timestamp,
  version: Type.Integer({
    minimum: 1,
    description:
      'Starts at 1; every change of the record adds 1 (a correction, a merge patch, entering it in error); the ETag of the record is W/"<version>"',
  }),
  enteredInError: Nullable(
    Type.Object(
      { by: Id, at: Timestamp, reason: Type.String() },
      { description: 'Who withdrew the record, when and why' },
    ),
  ),
}

/** A clinical record of one kind as the API returns it: common fields plus the kind's own. */
const ClinicalRecord = (data: TObject) =>
  Type.Composite([Type.Object(RecordFields), data], data.title ? { title: data.title } : {})

export const EnteredInErrorBody = Named(
  'EnteredInError',
  Type.Object(
    { reason: Text(500, { description: 'Why the record is withdrawn' }) },
    {
      ...strict,
      description: 'Marks the record ENTERED_IN_ERROR; it is kept, never deleted',
      examples: [{ reason: 'Recorded for the wrong patient' }],
    },
  ),
)
export type EnteredInErrorBody = Static<typeof EnteredInErrorBody>

export const RecordParams = Type.Object({ patientId: Id, id: Id }, strict)

const CLINICAL_SORT_FIELDS = ['effectiveAt', 'recordedAt'] as const

/** Query of a clinical list: paging, newest first by default, the kind's status and code filters, a time range. */
export const ClinicalListQuery = (filters: TProperties) =>
  ListQuery(CLINICAL_SORT_FIELDS, {
    ...filters,
    from: Type.Optional(Type.String({ format: 'date-time', description: 'Clinical time at or after' })),
    to: Type.Optional(Type.String({ format: 'date-time', description: 'Clinical time before' })),
    includeEnteredInError: Type.Optional(
      Type.Boolean({
        default: false,
        description:
          'Also list withdrawn records. Sync pages (`updatedSince`, `cursor`) always hold them, so a copy learns of a withdrawal.',
      }),
    ),
  })

// ---- Vital signs -------------------------------------------------------------------------------

const VITAL_STATUSES = ['FINAL', 'AMENDED', ENTERED_IN_ERROR] as const

export const VitalSignsInput = Named(
  'VitalSignsInput',
  Type.Object(
    {
      ...encounterLink,
      recordedAt: Type.Optional(
        Type.String({ format: 'date-time', description: 'When measured; default now' }),
      ),
      systolic: Type.Optional(Type.Integer({ minimum: 50, maximum: 300, description: 'mmHg, 50–300' })),
      diastolic: Type.Optional(
        Type.Integer({ minimum: 20, maximum: 200, description: 'mmHg, 20–200, below systolic' }),
      ),
      heartRate: Type.Optional(
        Type.Integer({ minimum: 20, maximum: 300, description: 'Beats per minute, 20–300' }),
      ),
      respiratoryRate: Type.Optional(
        Type.Integer({ minimum: 4, maximum: 80, description: 'Breaths per minute, 4–80' }),
      ),
      temperature: Type.Optional(
        Type.Object(
          {
            value: Type.Number({ description: '25–45 °C (77–113 °F)' }),
            unit: literals(['C', 'F']),
          },
          { ...strict, description: 'Stored in °C' },
        ),
      ),
      spo2: Type.Optional(
        Type.Integer({ minimum: 50, maximum: 100, description: 'Oxygen saturation %, 50–100' }),
      ),
      heightCm: Type.Optional(Type.Number({ minimum: 20, maximum: 272, description: 'cm, 20–272' })),
      weightKg: Type.Optional(Type.Number({ minimum: 0.2, maximum: 650, description: 'kg, 0.2–650' })),
      painScore: Type.Optional(Type.Integer({ minimum: 0, maximum: 10, description: '0–10' })),
    },
    {
      ...strict,
      description: 'At least one measurement. BMI is computed from height and weight.',
      examples: [{ systolic: 128, diastolic: 82, heartRate: 71, temperature: { value: 36.8, unit: 'C' } }],
    },
  ),
)
export type VitalSignsInput = Static<typeof VitalSignsInput>

export const VitalSignsData = Named(
  'VitalSigns',
  Type.Object({
    status: literals(VITAL_STATUSES, 'FINAL; AMENDED after a correction; ENTERED_IN_ERROR'),
    systolic: Nullable(Type.Integer()),
    diastolic: Nullable(Type.Integer()),
    heartRate: Nullable(Type.Integer()),
    respiratoryRate: Nullable(Type.Integer()),
    temperatureCelsius: Nullable(Type.Number()),
    spo2: Nullable(Type.Integer()),
    heightCm: Nullable(Type.Number()),
    weightKg: Nullable(Type.Number()),
    bmi: Nullable(Type.Number({ description: 'kg/m², computed, one decimal' })),
    painScore: Nullable(Type.Integer()),
  }),
)
export type VitalSignsData = Static<typeof VitalSignsData>

// ---- Lab results -------------------------------------------------------------------------------

const LAB_STATUSES = ['PRELIMINARY', 'FINAL', 'CORRECTED', ENTERED_IN_ERROR] as const
const INTERPRETATIONS = ['NORMAL', 'LOW', 'HIGH', 'CRITICAL'] as const

const ReferenceRange = Type.Object(
  {
    low: Type.Optional(Type.Number()),
    high: Type.Optional(Type.Number()),
    text: Type.Optional(Text(200)),
  },
  { ...strict, description: 'Numeric low/high, or text for other results' },
)

export const LabResultInput = Named(
  'LabResultInput',
  Type.Object(
    {
      ...encounterLink,
      testCode: Type.String({
        pattern: '^[0-9]{1,7}-[0-9]$',
        description: 'LOINC code; its check digit is verified',
      }),
      testName: Text(200),
      value: Type.Union([Type.Number(), Text(500)], { description: 'Numeric or text result' }),
      unit: Type.Optional(Type.String({ maxLength: 30 })),
      referenceRange: Type.Optional(ReferenceRange),
      interpretation: Type.Optional(
        literals(INTERPRETATIONS, 'Computed from a numeric value and range when omitted (NORMAL, LOW, HIGH)'),
      ),
      status: Type.Optional(
        literals(
          ['PRELIMINARY', 'FINAL', 'CORRECTED'],
          'Default FINAL; a correction of a FINAL result becomes CORRECTED',
        ),
      ),
      specimenCollectedAt: Type.Optional(Type.String({ format: 'date-time' })),
      resultedAt: Type.Optional(
        Type.String({ format: 'date-time', description: 'Default now; not before collection' }),
      ),
    },
    {
      ...strict,
      examples: [
        {
          testCode: '2345-7',
          testName: 'Glucose [Mass/volume] in Serum or Plasma',
          value: 182,
          unit: 'mg/dL',
          referenceRange: { low: 70, high: 99 },
        },
      ],
    },
  ),
)
export type LabResultInput = Static<typeof LabResultInput>

export const LabResultData = Named(
  'LabResult',
  Type.Object({
    status: literals(LAB_STATUSES),
    testCode: Type.String(),
    testName: Type.String(),
    value: Type.Union([Type.Number(), Type.String()]),
    unit: Nullable(Type.String()),
    referenceRange: Nullable(
      Type.Object({
        low: Nullable(Type.Number()),
        high: Nullable(Type.Number()),
        text: Nullable(Type.String()),
      }),
    ),
    interpretation: Nullable(literals(INTERPRETATIONS)),
    specimenCollectedAt: Nullable(Timestamp),
    resultedAt: Timestamp,
  }),
)
export type LabResultData = Static<typeof LabResultData>

// ---- Conditions --------------------------------------------------------------------------------

const CLINICAL_STATUSES = ['ACTIVE', 'RECURRENCE', 'RELAPSE', 'INACTIVE', 'REMISSION', 'RESOLVED'] as const
const VERIFICATION_STATUSES = ['UNCONFIRMED', 'PROVISIONAL', 'DIFFERENTIAL', 'CONFIRMED', 'REFUTED'] as const

export const ConditionInput = Named(
  'ConditionInput',
  Type.Object(
    {
      ...encounterLink,
      icd10Code: Type.String({
        pattern: '^[A-TV-Z][0-9][0-9AB](\\.[0-9A-TV-Z]{1,4})?$',
        description: 'ICD-10-CM code, e.g. E11.9',
      }),
      description: Text(300),
      clinicalStatus: Type.Optional(literals(CLINICAL_STATUSES, 'Default ACTIVE')),
      verificationStatus: Type.Optional(literals(VERIFICATION_STATUSES, 'Default CONFIRMED')),
      onsetDate: Optional(DateString),
      abatementDate: Optional(
        Type.String({ format: 'date', description: 'Not before onsetDate, not in the future' }),
      ),
      severity: Optional(literals(SEVERITIES)),
      note: Optional(Text(2000)),
    },
    {
      ...strict,
      examples: [{ icd10Code: 'E11.9', description: 'Type 2 diabetes mellitus', onsetDate: '2019-04-01' }],
    },
  ),
)
export type ConditionInput = Static<typeof ConditionInput>

export const ConditionData = Named(
  'Condition',
  Type.Object({
    icd10Code: Type.String(),
    description: Type.String(),
    clinicalStatus: literals([...CLINICAL_STATUSES, ENTERED_IN_ERROR]),
    verificationStatus: literals(VERIFICATION_STATUSES),
    onsetDate: Nullable(DateString),
    abatementDate: Nullable(DateString),
    severity: Nullable(literals(SEVERITIES)),
    note: Nullable(Type.String()),
  }),
)
export type ConditionData = Static<typeof ConditionData>

// ---- Allergies ---------------------------------------------------------------------------------

const ALLERGY_STATUSES = ['ACTIVE', 'INACTIVE', 'RESOLVED', ENTERED_IN_ERROR] as const
export const ALLERGY_CATEGORIES = ['FOOD', 'MEDICATION', 'ENVIRONMENT', 'BIOLOGIC'] as const

export const AllergyInput = Named(
  'AllergyInput',
  Type.Object(
    {
      ...encounterLink,
      substance: Text(200),
      substanceCode: Optional(
        Type.Object(
          {
            system: literals(['RXNORM', 'SNOMED_CT', 'UNII']),
            code: Type.String({ pattern: '^[A-Za-z0-9.-]{1,40}$' }),
          },
          strict,
        ),
      ),
      category: literals(ALLERGY_CATEGORIES),
      reactions: Type.Optional(
        Type.Array(
          Type.Object({ manifestation: Text(200), severity: Optional(literals(SEVERITIES)) }, strict),
          {
            maxItems: 20,
          },
        ),
      ),
      severity: Optional(literals(SEVERITIES)),
      criticality: Optional(literals(['LOW', 'HIGH', 'UNABLE_TO_ASSESS'])),
      status: Type.Optional(
        literals(
          ['ACTIVE', 'INACTIVE', 'RESOLVED'],
          'Default ACTIVE; at most one ACTIVE allergy per substance',
        ),
      ),
      onsetDate: Optional(DateString),
    },
    {
      ...strict,
      description:
        'The substance is identified by its code when given, else by its name (case and spacing ignored); a second ACTIVE allergy to it is 409.',
      examples: [
        {
          substance: 'Penicillin',
          category: 'MEDICATION',
          reactions: [{ manifestation: 'Hives' }],
          severity: 'MODERATE',
        },
      ],
    },
  ),
)
export type AllergyInput = Static<typeof AllergyInput>

export const AllergyData = Named(
  'Allergy',
  Type.Object({
    status: literals(ALLERGY_STATUSES),
    substance: Type.String(),
    substanceCode: Nullable(Type.Object({ system: Type.String(), code: Type.String() })),
    category: literals(ALLERGY_CATEGORIES),
    reactions: Type.Array(
      Type.Object({ manifestation: Type.String(), severity: Nullable(literals(SEVERITIES)) }),
    ),
    severity: Nullable(literals(SEVERITIES)),
    criticality: Nullable(Type.String()),
    onsetDate: Nullable(DateString),
  }),
)
export type AllergyData = Static<typeof AllergyData>

// ---- Medications -------------------------------------------------------------------------------

const MEDICATION_STATUSES = ['ACTIVE', 'COMPLETED', 'STOPPED', 'ON_HOLD', ENTERED_IN_ERROR] as const
const MEDICATION_ROUTES = [
  'ORAL',
  'SUBLINGUAL',
  'INTRAVENOUS',
  'INTRAMUSCULAR',
  'SUBCUTANEOUS',
  'TOPICAL',
  'INHALED',
  'RECTAL',
  'OTHER',
] as const

export const MedicationInput = Named(
  'MedicationInput',
  Type.Object(
    {
      ...encounterLink,
      name: Text(200),
      rxnormCode: Optional(Type.String({ pattern: '^[0-9]{1,10}$', description: 'RxNorm concept id' })),
      dose: Optional(Type.Number({ exclusiveMinimum: 0, maximum: 100000 })),
      doseUnit: Optional(Type.String({ minLength: 1, maxLength: 20 })),
      route: Optional(literals(MEDICATION_ROUTES)),
      frequency: Optional(Text(100)),
      startDate: Optional(DateString),
      endDate: Optional(Type.String({ format: 'date', description: 'Not before startDate' })),
      prescriberId: Optional(
        Type.Integer({ minimum: 1, description: 'The prescribing provider (of your organization)' }),
      ),
      status: Type.Optional(literals(['ACTIVE', 'COMPLETED', 'STOPPED', 'ON_HOLD'], 'Default ACTIVE')),
      instructions: Optional(Text(2000)),
    },
    {
      ...strict,
      examples: [
        {
          name: 'Metformin 500 mg tablet',
          rxnormCode: '861007',
          dose: 500,
          doseUnit: 'mg',
          route: 'ORAL',
          frequency: 'twice daily',
        },
      ],
    },
  ),
)
export type MedicationInput = Static<typeof MedicationInput>

export const MedicationData = Named(
  'Medication',
  Type.Object({
    status: literals(MEDICATION_STATUSES),
    name: Type.String(),
    rxnormCode: Nullable(Type.String()),
    dose: Nullable(Type.Number()),
    doseUnit: Nullable(Type.String()),
    route: Nullable(literals(MEDICATION_ROUTES)),
    frequency: Nullable(Type.String()),
    startDate: Nullable(DateString),
    endDate: Nullable(DateString),
    prescriberId: Nullable(Id),
    instructions: Nullable(Type.String()),
  }),
)
export type MedicationData = Static<typeof MedicationData>

// ---- Chart -------------------------------------------------------------------------------------

export const Chart = Named(
  'Chart',
  Type.Object({
    patientId: Id,
    latestVitals: Nullable(ClinicalRecord(VitalSignsData)),
    activeConditions: Type.Array(ClinicalRecord(ConditionData)),
    activeAllergies: Type.Array(ClinicalRecord(AllergyData)),
    activeMedications: Type.Array(ClinicalRecord(MedicationData)),
    recentLabResults: Type.Array(ClinicalRecord(LabResultData), { description: 'The 10 most recent' }),
  }),
)
export type Chart = Static<typeof Chart>
export const ChartEnvelope = Envelope(Chart)

export const recordEnvelopes = (data: TObject) => ({
  one: Envelope(ClinicalRecord(data)),
  page: Envelope(Page(ClinicalRecord(data))),
})

/** The body of a PATCH of a kind whose full correction is written with `input`. */
export const RecordPatch = (input: TObject, label: string) =>
  MergePatch(input, {
    title: `${input.title?.replace(/Input$/, '')}Patch`,
    description: `A JSON Merge Patch (RFC 7396) of the ${label}, applied to the fields a correction would send to write it as it is: only the members sent change, \`null\` removes an optional one, nested objects merge, arrays are replaced. BMI is computed again from the merged height and weight; a lab result keeps its interpretation unless the patch sets it (\`null\` computes it again from the value and range). The merged record must pass the same checks as a full correction (422). Read-only members (\`id\`, \`version\`, …) are refused.`,
  })
