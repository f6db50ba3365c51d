import type { AllergyIntolerance } from '@medplum/fhirtypes'
import { sql } from 'kysely'
import type { ClinicalRecordRow } from '../../../db/tables/clinical-records.js'
import type { AllergyData } from '../../../schemas/clinical.js'
import {
  type ClinicalQuery,
  clinicalResourceType,
  coded,
  encounterOf,
  inverse,
  metaOf,
  nothing,
  ourCodes,
  withdrawn,
} from './clinical-record.js'
import type { FhirResourceType } from './resource-type.js'
import { present, whereOneOf } from './search-conditions.js'
import { occurrences, type SearchQuery } from './search-params.js'

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
const SEVERITY: Record<string, 'mild' | 'moderate' | 'severe'> = {
  MILD: 'mild',
  MODERATE: 'moderate',
  SEVERE: 'severe',
}
/** The code systems a substance code may be given in, by their FHIR URIs. */
const SUBSTANCE_SYSTEMS: Record<string, string> = {
  RXNORM: 'http://www.nlm.nih.gov/research/umls/rxnorm',
  SNOMED_CT: 'http://snomed.info/sct',
  UNII: 'http://fdasis.nlm.nih.gov',
}

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
  const reactions = data.reactions.map((reaction) =>
    present({
      manifestation: [{ text: reaction.manifestation }],
      severity: reaction.severity ? SEVERITY[reaction.severity] : undefined,
    }),
  )
  return present({
    resourceType: 'AllergyIntolerance' as const,
    id: String(row.id),
    meta: metaOf(row),
    clinicalStatus: coded(CLINICAL_SYSTEM, removed ? undefined : CLINICAL_STATUS[data.status]),
    verificationStatus: coded(VERIFICATION_SYSTEM, removed ? 'entered-in-error' : undefined),
    category: CATEGORY[data.category] ? [CATEGORY[data.category]] : undefined,
    criticality: data.criticality ? CRITICALITY[data.criticality] : undefined,
    code: {
      coding: system && data.substanceCode ? [{ system, code: data.substanceCode.code }] : undefined,
      text: data.substance,
    },
    patient: { reference: `Patient/${row.patient_id}` },
    encounter: encounterOf(row),
    onsetDateTime: data.onsetDate ?? undefined,
    recordedDate: row.recorded_at.toISOString(),
    reaction: reactions.length > 0 ? reactions : undefined,
  }) as AllergyIntolerance & { id: string }
}

function allergiesFiltered(query: ClinicalQuery, search: SearchQuery): ClinicalQuery {
  let result = query
  for (const values of occurrences(search, 'clinical-status')) {
    const statuses = ourCodes(values, CLINICAL_SYSTEM, CLINICAL_STATUS_OF_CODE)
    result = whereOneOf(result, 'status', statuses)
  }
  for (const values of occurrences(search, 'category')) {
    const categories = ourCodes(values, CATEGORY_SYSTEM, CATEGORY_OF_CODE)
    result =
      categories.length > 0
        ? result.where(sql<string>`data->>'category'`, 'in', categories)
        : result.where(nothing)
  }
  return result
}

/** AllergyIntolerance: the patients' allergies and intolerances. */
export function allergyIntoleranceResource(): FhirResourceType<AllergyIntolerance> {
  return clinicalResourceType<AllergyIntolerance>({
    type: 'AllergyIntolerance',
    kind: 'ALLERGY',
    path: 'allergies',
    searchParameters: [
      {
        name: 'clinical-status',
        type: 'token',
        documentation: `active | inactive | resolved (${CLINICAL_SYSTEM})`,
      },
      { name: 'category', type: 'token', documentation: 'food | medication | environment | biologic' },
    ],
    toFhir: toFhirAllergyIntolerance,
    filtered: allergiesFiltered,
    patientOf: (resource) => resource.patient,
  })
}
