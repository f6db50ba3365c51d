import type { AllergyIntolerance } from '@medplum/fhirtypes'
import { sql } from 'kysely'
import type { ClinicalRecordRow } from '../../../db/tables/clinical-records.js'
import type { AllergyData } from '../../../schemas/clinical.js'
import { allergies } from '../clinical/service.js'
import { clinicalResourceType, coded, withdrawn } from './clinical-record.js'
import { type ClinicalStatement, clinicalWrites, codeIn, oursOf } from './clinical-writes.js'
import { claiming, recordResource, reference, withoutUndefined } from './resource-elements.js'
import type { FhirResourceType } from './resource-type.js'
import { inverse, tokenParameter } from './search-conditions.js'
import { US_CORE_ALLERGY_INTOLERANCE } from './us-core-profiles.js'

const CLINICAL_SYSTEM = 'http://terminology.hl7.org/CodeSystem/allergyintolerance-clinical'
const VERIFICATION_SYSTEM = 'http://terminology.hl7.org/CodeSystem/allergyintolerance-verification'
const CATEGORY_SYSTEM = 'http://hl7.org/fhir/allergy-intolerance-category'

const CLINICAL_STATUS: Record<string, string> = {
  ACTIVE: 'active',
  INACTIVE: 'inactive',
  RESOLVED: 'resolved',
}
const CLINICAL_STATUS_OF_CODE = inverse(CLINICAL_STATUS)
const CATEGORY: Record<string, 'food' | 'medication' | 'environment' | 'biologic'> = {
  FOOD: 'food',
  MEDICATION: 'medication',
  ENVIRONMENT: 'environment',
  BIOLOGIC: 'biologic',
}
const CATEGORY_OF_CODE = inverse(CATEGORY)
const CRITICALITY: Record<string, 'low' | 'high' | 'unable-to-assess'> = {
  LOW: 'low',
  HIGH: 'high',
  UNABLE_TO_ASSESS: 'unable-to-assess',
}
const CRITICALITY_OF_CODE = inverse(CRITICALITY)
const SEVERITY: Record<string, 'mild' | 'moderate' | 'severe'> = {
  MILD: 'mild',
  MODERATE: 'moderate',
  SEVERE: 'severe',
}
const SEVERITY_OF_CODE = inverse(SEVERITY)
/** The code systems a substance code may be given in, by their FHIR URIs. */
const SUBSTANCE_SYSTEMS: Record<string, string> = {
  RXNORM: 'http://www.nlm.nih.gov/research/umls/rxnorm',
  SNOMED_CT: 'http://snomed.info/sct',
  UNII: 'http://fdasis.nlm.nih.gov',
}
const SUBSTANCE_SYSTEM_OF_URI = inverse(SUBSTANCE_SYSTEMS)

/**
 * An allergy record as FHIR R4 AllergyIntolerance. The substance is `code.text`, with a coding
 * when the record holds a code of a known system. We record no verification, so verificationStatus
 * is sent only for a withdrawn record (entered-in-error, without clinicalStatus: ait-2). The
 * record's overall severity has no place in R4 (only each reaction's severity has): it is left out.
 */
function toFhirAllergyIntolerance(row: ClinicalRecordRow): AllergyIntolerance & { id: string } {
  const data = row.data as AllergyData
  const removed = withdrawn(row)
  const system = data.substanceCode ? SUBSTANCE_SYSTEMS[data.substanceCode.system] : undefined
  const category = CATEGORY[data.category]
  const reactions = data.reactions.map((reaction) =>
    withoutUndefined({
      manifestation: [{ text: reaction.manifestation }],
      severity: reaction.severity ? SEVERITY[reaction.severity] : undefined,
    }),
  )
  const allergy = recordResource<AllergyIntolerance>('AllergyIntolerance', row, {
    clinicalStatus: coded(CLINICAL_SYSTEM, removed ? undefined : CLINICAL_STATUS[data.status]),
    verificationStatus: coded(VERIFICATION_SYSTEM, removed ? 'entered-in-error' : undefined),
    category: category ? [category] : undefined,
    criticality: data.criticality ? CRITICALITY[data.criticality] : undefined,
    code: {
      coding: system && data.substanceCode ? [{ system, code: data.substanceCode.code }] : undefined,
      text: data.substance,
    },
    patient: reference('Patient', row.patient_id),
    encounter: reference('Encounter', row.encounter_id),
    onsetDateTime: data.onsetDate ?? undefined,
    recordedDate: row.recorded_at.toISOString(),
    reaction: reactions.length > 0 ? reactions : undefined,
  })
  return claiming(US_CORE_ALLERGY_INTOLERANCE, allergy)
}

/** What an AllergyIntolerance says of its record: the elements toFhirAllergyIntolerance writes. */
function allergyStatement(allergy: AllergyIntolerance): ClinicalStatement {
  const coding = allergy.code?.coding?.find(({ system }) => system && SUBSTANCE_SYSTEM_OF_URI[system])
  const system = oursOf(SUBSTANCE_SYSTEM_OF_URI, coding?.system)
  return {
    patient: allergy.patient,
    encounter: allergy.encounter,
    recordedAt: allergy.recordedDate,
    enteredInError: codeIn(allergy.verificationStatus, VERIFICATION_SYSTEM) === 'entered-in-error',
    input: withoutUndefined({
      substance: allergy.code?.text,
      substanceCode: system && coding?.code ? { system, code: coding.code } : undefined,
      category: oursOf(CATEGORY_OF_CODE, allergy.category?.[0]),
      reactions: allergy.reaction?.map((reaction) =>
        withoutUndefined({
          manifestation: reaction.manifestation?.[0]?.text,
          severity: oursOf(SEVERITY_OF_CODE, reaction.severity),
        }),
      ),
      criticality: oursOf(CRITICALITY_OF_CODE, allergy.criticality),
      status: oursOf(CLINICAL_STATUS_OF_CODE, codeIn(allergy.clinicalStatus, CLINICAL_SYSTEM)),
      onsetDate: allergy.onsetDateTime,
    }),
  }
}

const allergyWrites = clinicalWrites({
  type: 'AllergyIntolerance',
  kind: allergies,
  toFhir: toFhirAllergyIntolerance,
  statementOf: allergyStatement,
  elements: {
    patientId: 'patient',
    recordedAt: 'recordedDate',
    enteredInError: 'verificationStatus',
    'input.encounterId': 'encounter',
    'input.substance': 'code.text',
    'input.substanceCode': 'code.coding',
    'input.category': 'category',
    'input.reactions': 'reaction',
    'input.criticality': 'criticality',
    'input.status': 'clinicalStatus',
    'input.onsetDate': 'onsetDateTime',
  },
  // The record's overall severity has no place in R4.
  unseen: (data) => ({ severity: data.severity }),
})

/** AllergyIntolerance: the patients' allergies and intolerances. */
export function allergyIntoleranceResource(): FhirResourceType<AllergyIntolerance> {
  return clinicalResourceType<AllergyIntolerance>({
    type: 'AllergyIntolerance',
    profile: US_CORE_ALLERGY_INTOLERANCE,
    kind: 'ALLERGY',
    path: 'allergies',
    searchParameters: [
      tokenParameter('clinical-status', `active | inactive | resolved (${CLINICAL_SYSTEM})`, 'status', {
        system: CLINICAL_SYSTEM,
        ours: CLINICAL_STATUS_OF_CODE,
      }),
      tokenParameter('category', 'food | medication | environment | biologic', sql`data->>'category'`, {
        system: CATEGORY_SYSTEM,
        ours: CATEGORY_OF_CODE,
      }),
    ],
    toFhir: toFhirAllergyIntolerance,
    patientOf: (resource) => resource.patient,
    writes: allergyWrites,
  })
}
