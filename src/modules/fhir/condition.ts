import type { Condition } from '@medplum/fhirtypes'
import type { ClinicalRecordRow } from '../../../db/tables/clinical-records.js'
import type { ConditionData } from '../../../schemas/clinical.js'
import { invalidField } from '../../errors.js'
import { conditions } from '../clinical/service.js'
import { clinicalResourceType, coded, withdrawn } from './clinical-record.js'
import { type ClinicalStatement, clinicalWrites, codeIn, oursOf } from './clinical-writes.js'
import { claiming, recordResource, reference, withoutUndefined } from './resource-elements.js'
import type { FhirResourceType } from './resource-type.js'
import type { ResourceWrites } from './resource-writes.js'
import { inverse, tokenParameter } from './search-conditions.js'
import { US_CORE_CONDITION_ENCOUNTER_DIAGNOSIS, US_CORE_CONDITION_PROBLEMS } from './us-core-profiles.js'

const ICD10_CM = 'http://hl7.org/fhir/sid/icd-10-cm'
const CLINICAL_SYSTEM = 'http://terminology.hl7.org/CodeSystem/condition-clinical'
const VERIFICATION_SYSTEM = 'http://terminology.hl7.org/CodeSystem/condition-ver-status'
const CATEGORY_SYSTEM = 'http://terminology.hl7.org/CodeSystem/condition-category'
const SNOMED = 'http://snomed.info/sct'

const CLINICAL_STATUS: Record<string, string> = {
  ACTIVE: 'active',
  RECURRENCE: 'recurrence',
  RELAPSE: 'relapse',
  INACTIVE: 'inactive',
  REMISSION: 'remission',
  RESOLVED: 'resolved',
}
const CLINICAL_STATUS_OF_CODE = inverse(CLINICAL_STATUS)
const VERIFICATION_STATUS: Record<string, string> = {
  UNCONFIRMED: 'unconfirmed',
  PROVISIONAL: 'provisional',
  DIFFERENTIAL: 'differential',
  CONFIRMED: 'confirmed',
  REFUTED: 'refuted',
}
const VERIFICATION_STATUS_OF_CODE = inverse(VERIFICATION_STATUS)
// con-4: only an inactive, remitted or resolved condition may carry an abatement.
const ABATED = new Set(['inactive', 'remission', 'resolved'])
// The condition-severity value set's SNOMED CT codes.
const SEVERITY: Record<string, { code: string; display: string }> = {
  MILD: { code: '255604002', display: 'Mild' },
  MODERATE: { code: '6736007', display: 'Moderate' },
  SEVERE: { code: '24484000', display: 'Severe' },
}
const SEVERITY_OF_CODE = inverse(
  Object.fromEntries(Object.entries(SEVERITY).map(([ours, { code }]) => [ours, code])),
)
/** The category of each kind of record a Condition is. */
const CATEGORY = {
  CONDITION: { code: 'problem-list-item', display: 'Problem List Item' },
  ENCOUNTER_DIAGNOSIS: { code: 'encounter-diagnosis', display: 'Encounter Diagnosis' },
} as const
const KIND_OF_CATEGORY = inverse(
  Object.fromEntries(Object.entries(CATEGORY).map(([kind, { code }]) => [kind, code])),
)
const categoryOf = (kind: keyof typeof CATEGORY) => [
  { coding: [{ system: CATEGORY_SYSTEM, ...CATEGORY[kind] }] },
]
const codeOf = (data: { icd10Code: string; description: string }) => ({
  coding: [{ system: ICD10_CM, code: data.icd10Code }],
  text: data.description,
})

/**
 * A condition record as FHIR R4 Condition: a problem-list item coded in ICD-10-CM. A withdrawn
 * record has verificationStatus entered-in-error and no clinicalStatus (con-5; its old one is not
 * kept). The abatement date is sent only with an abated clinical status (con-4).
 */
function toFhirProblem(row: ClinicalRecordRow): Condition & { id: string } {
  const data = row.data as ConditionData
  const removed = withdrawn(row)
  const clinical = removed ? undefined : CLINICAL_STATUS[data.clinicalStatus]
  const severity = data.severity ? SEVERITY[data.severity] : undefined
  const condition = recordResource<Condition>('Condition', row, {
    clinicalStatus: coded(CLINICAL_SYSTEM, clinical),
    verificationStatus: coded(
      VERIFICATION_SYSTEM,
      removed ? 'entered-in-error' : VERIFICATION_STATUS[data.verificationStatus],
    ),
    category: categoryOf('CONDITION'),
    severity: severity ? { coding: [{ system: SNOMED, ...severity }], text: severity.display } : undefined,
    code: codeOf(data),
    subject: reference('Patient', row.patient_id),
    encounter: reference('Encounter', row.encounter_id),
    onsetDateTime: data.onsetDate ?? undefined,
    abatementDateTime:
      clinical !== undefined && ABATED.has(clinical) ? (data.abatementDate ?? undefined) : undefined,
    recordedDate: row.recorded_at.toISOString(),
    note: data.note ? [{ text: data.note }] : undefined,
  })
  return claiming(US_CORE_CONDITION_PROBLEMS, condition)
}

/**
 * A diagnosis of a signed encounter's note: its code, the encounter, and when the note was signed.
 * The note says nothing of the diagnosis's course or certainty: no clinical or verification status.
 */
function toFhirEncounterDiagnosis(row: ClinicalRecordRow): Condition & { id: string } {
  const condition = recordResource<Condition>('Condition', row, {
    category: categoryOf('ENCOUNTER_DIAGNOSIS'),
    code: codeOf(row.data as { icd10Code: string; description: string }),
    subject: reference('Patient', row.patient_id),
    encounter: reference('Encounter', row.encounter_id),
    recordedDate: row.recorded_at.toISOString(),
  })
  return claiming(US_CORE_CONDITION_ENCOUNTER_DIAGNOSIS, condition)
}

const toFhirCondition = (row: ClinicalRecordRow) =>
  row.kind === 'ENCOUNTER_DIAGNOSIS' ? toFhirEncounterDiagnosis(row) : toFhirProblem(row)

/** What a Condition says of its record: the elements toFhirCondition writes. */
function conditionStatement(condition: Condition): ClinicalStatement {
  const verification = codeIn(condition.verificationStatus, VERIFICATION_SYSTEM)
  return {
    patient: condition.subject,
    encounter: condition.encounter,
    recordedAt: condition.recordedDate,
    enteredInError: verification === 'entered-in-error',
    input: withoutUndefined({
      icd10Code: codeIn(condition.code, ICD10_CM),
      description: condition.code?.text,
      clinicalStatus: oursOf(CLINICAL_STATUS_OF_CODE, codeIn(condition.clinicalStatus, CLINICAL_SYSTEM)),
      verificationStatus: oursOf(VERIFICATION_STATUS_OF_CODE, verification),
      onsetDate: condition.onsetDateTime,
      abatementDate: condition.abatementDateTime,
      severity: oursOf(SEVERITY_OF_CODE, codeIn(condition.severity, SNOMED)),
      note: condition.note?.[0]?.text,
    }),
  }
}

const problemWrites = clinicalWrites({
  type: 'Condition',
  kind: conditions,
  toFhir: toFhirProblem,
  statementOf: conditionStatement,
  elements: {
    patientId: 'subject',
    recordedAt: 'recordedDate',
    enteredInError: 'verificationStatus',
    'input.encounterId': 'encounter',
    'input.icd10Code': 'code.coding',
    'input.description': 'code.text',
    'input.clinicalStatus': 'clinicalStatus',
    'input.verificationStatus': 'verificationStatus',
    'input.onsetDate': 'onsetDateTime',
    'input.abatementDate': 'abatementDateTime',
    'input.severity': 'severity',
    'input.note': 'note',
  },
  // The abatement date of a condition whose status is not abated is not shown (con-4).
  unseen: (data, sent) =>
    sent.abatementDate === undefined && !ABATED.has(CLINICAL_STATUS[sent.clinicalStatus ?? 'ACTIVE'] ?? '')
      ? { abatementDate: data.abatementDate }
      : {},
})

const isEncounterDiagnosis = (condition: Condition | undefined) =>
  condition?.category?.some((category) =>
    category.coding?.some(
      (coding) => coding.system === CATEGORY_SYSTEM && coding.code === CATEGORY.ENCOUNTER_DIAGNOSIS.code,
    ),
  ) ?? false

/** Problem-list items are written here; an encounter diagnosis only through its encounter's note (422). */
const conditionWrites: ResourceWrites<Condition> = {
  ...problemWrites,
  kindOf(condition, current) {
    if (isEncounterDiagnosis(condition) || isEncounterDiagnosis(current)) {
      throw invalidField(
        'Condition.category',
        'an encounter diagnosis is written through its encounter’s note (its assessment’s diagnoses), not as a Condition; only problem-list items are written here',
      )
    }
    return problemWrites
  },
}

/** Condition: the patients' problem lists, and the diagnoses of their signed encounters' notes. */
export function conditionResource(): FhirResourceType<Condition> {
  return clinicalResourceType<Condition>({
    type: 'Condition',
    profile: [US_CORE_CONDITION_PROBLEMS, US_CORE_CONDITION_ENCOUNTER_DIAGNOSIS],
    kind: ['CONDITION', 'ENCOUNTER_DIAGNOSIS'],
    path: 'conditions',
    searchParameters: [
      tokenParameter(
        'clinical-status',
        `active | recurrence | relapse | inactive | remission | resolved (${CLINICAL_SYSTEM})`,
        'status',
        { system: CLINICAL_SYSTEM, ours: CLINICAL_STATUS_OF_CODE },
      ),
      tokenParameter('category', `problem-list-item | encounter-diagnosis (${CATEGORY_SYSTEM})`, 'kind', {
        system: CATEGORY_SYSTEM,
        ours: KIND_OF_CATEGORY,
      }),
      tokenParameter('code', `ICD-10-CM code, system ${ICD10_CM}`, 'code', { system: ICD10_CM }),
    ],
    toFhir: toFhirCondition,
    patientOf: (resource) => resource.subject,
    writes: conditionWrites,
  })
}
