import type { CodeableConcept, Coding, DocumentReference } from '@medplum/fhirtypes'
import { invalidField } from '../../errors.js'
import { codeIn } from './clinical-writes.js'
import { inverse, ownEntry, tokenValues } from './search-conditions.js'

// The codes of a DocumentReference: our categories, and the standard codes they map to.

/** Our document categories as a code system of our own: no standard one says the same. */
export const DOCUMENT_CATEGORY_SYSTEM = 'urn:ehr-service:document-category'

export const CATEGORY_NAMES: Record<string, string> = {
  LAB_REPORT: 'Laboratory report',
  IMAGING: 'Imaging',
  CONSENT: 'Consent',
  REFERRAL: 'Referral',
  CLINICAL_NOTE: 'Clinical note',
  OTHER: 'Other',
}

const LOINC = 'http://loinc.org'

/**
 * Each category's LOINC document type (US Core binds `type` to LOINC's document codes, required);
 * OTHER says nothing more than "a document", which US Core's value set writes as data-absent-reason's
 * `unknown`.
 */
const DOCUMENT_TYPES: Record<string, Coding> = {
  LAB_REPORT: { system: LOINC, code: '11502-2', display: 'Laboratory report' },
  IMAGING: { system: LOINC, code: '18748-4', display: 'Diagnostic imaging study' },
  CONSENT: { system: LOINC, code: '59284-0', display: 'Patient Consent' },
  REFERRAL: { system: LOINC, code: '57133-1', display: 'Referral note' },
  CLINICAL_NOTE: { system: LOINC, code: '34109-9', display: 'Note' },
}
const DATA_ABSENT_REASON = 'http://terminology.hl7.org/CodeSystem/data-absent-reason'
const UNKNOWN_TYPE: Coding = {
  system: DATA_ABSENT_REASON,
  code: 'unknown',
  display: 'Unknown',
}

/**
 * US Core's one category, for the categories that are clinical notes in its sense (reports and
 * referral notes included; a consent or an unclassified file is not).
 */
const US_CORE_CATEGORY_SYSTEM = 'http://hl7.org/fhir/us/core/CodeSystem/us-core-documentreference-category'
const CLINICAL_NOTE: CodeableConcept = {
  coding: [
    {
      system: US_CORE_CATEGORY_SYSTEM,
      code: 'clinical-note',
      display: 'Clinical Note',
    },
  ],
}
const CLINICAL_NOTE_CATEGORIES = new Set(['LAB_REPORT', 'IMAGING', 'REFERRAL', 'CLINICAL_NOTE'])

// Any upload's type is its attachment's contentType: nothing more is needed to read it.
export const MIME_TYPE_SUFFICIENT: Coding = {
  system: 'http://ihe.net/fhir/ihe.formatcode.fhir/CodeSystem/formatcode',
  code: 'urn:ihe:iti:xds:2017:mimeTypeSufficient',
  display: 'mimeType Sufficient',
}

function categoryCoding(category: string): Coding {
  return { system: DOCUMENT_CATEGORY_SYSTEM, code: category, display: CATEGORY_NAMES[category] ?? category }
}

export function typeConcept(category: string): CodeableConcept {
  const coding = categoryCoding(category)
  return { coding: [DOCUMENT_TYPES[category] ?? UNKNOWN_TYPE, coding], text: coding.display }
}

export function categoryConcepts(category: string): CodeableConcept[] {
  const coding = categoryCoding(category)
  const ours = { coding: [coding], text: coding.display }
  return CLINICAL_NOTE_CATEGORIES.has(category) ? [ours, CLINICAL_NOTE] : [ours]
}

/**
 * The document's category: our code in the category or the type (which carries it too), else the
 * category whose LOINC type the type names (a resource written by another US Core system).
 */
export function categoryOf(document: DocumentReference): string | undefined {
  const concepts = [...(document.category ?? []), ...(document.type ? [document.type] : [])]
  if (concepts.length === 0) return undefined
  const ours = concepts.map((concept) => codeIn(concept, DOCUMENT_CATEGORY_SYSTEM)).find(Boolean)
  if (ours !== undefined) return ours
  const loinc = document.type && codeIn(document.type, LOINC)
  const byType = Object.entries(DOCUMENT_TYPES).find(([, coding]) => coding.code === loinc)?.[0]
  if (byType === undefined) {
    throw invalidField(
      'category',
      `must be coded in ${DOCUMENT_CATEGORY_SYSTEM}, or the type in LOINC as one of its categories`,
    )
  }
  return byType
}

/** For each system a category's codes are in, our categories each of its codes stands for. */
const CATEGORIES_OF_CODE: Record<string, Record<string, string[]>> = {
  [DOCUMENT_CATEGORY_SYSTEM]: Object.fromEntries(Object.keys(CATEGORY_NAMES).map((code) => [code, [code]])),
  [LOINC]: inverse(
    Object.fromEntries(Object.entries(DOCUMENT_TYPES).map(([ours, { code }]) => [ours, code ?? ''])),
  ),
  [DATA_ABSENT_REASON]: { unknown: ['OTHER'] },
  [US_CORE_CATEGORY_SYSTEM]: { 'clinical-note': [...CLINICAL_NOTE_CATEGORIES] },
}

/** The systems of the codes a `type` search and a `category` search match. */
export const TYPE_SYSTEMS = [DOCUMENT_CATEGORY_SYSTEM, LOINC, DATA_ABSENT_REASON]
export const CATEGORY_SYSTEMS = [DOCUMENT_CATEGORY_SYSTEM, US_CORE_CATEGORY_SYSTEM]

/** Our categories that token search values name, in any of `systems`. */
export function categoriesNamed(values: string[], systems: readonly string[]): string[] {
  const named = systems.flatMap((system) =>
    tokenValues(values, system).flatMap((code) => ownEntry(CATEGORIES_OF_CODE[system] ?? {}, code) ?? []),
  )
  return [...new Set(named)]
}
