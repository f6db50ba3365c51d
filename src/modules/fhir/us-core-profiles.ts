// Claimed with their version: the constraints met are those of US Core 6.1.0, not of a later one.
const PROFILES = 'http://hl7.org/fhir/us/core/StructureDefinition'

export const US_CORE_PATIENT = `${PROFILES}/us-core-patient|6.1.0`
export const US_CORE_PRACTITIONER = `${PROFILES}/us-core-practitioner|6.1.0`
export const US_CORE_PRACTITIONER_ROLE = `${PROFILES}/us-core-practitionerrole|6.1.0`
export const US_CORE_ORGANIZATION = `${PROFILES}/us-core-organization|6.1.0`
export const US_CORE_LOCATION = `${PROFILES}/us-core-location|6.1.0`
export const US_CORE_CONDITION_PROBLEMS = `${PROFILES}/us-core-condition-problems-health-concerns|6.1.0`
export const US_CORE_CONDITION_ENCOUNTER_DIAGNOSIS = `${PROFILES}/us-core-condition-encounter-diagnosis|6.1.0`
export const US_CORE_ENCOUNTER = `${PROFILES}/us-core-encounter|6.1.0`
export const US_CORE_DOCUMENT_REFERENCE = `${PROFILES}/us-core-documentreference|6.1.0`
export const US_CORE_PROVENANCE = `${PROFILES}/us-core-provenance|6.1.0`
export const US_CORE_ALLERGY_INTOLERANCE = `${PROFILES}/us-core-allergyintolerance|6.1.0`
export const US_CORE_MEDICATION_REQUEST = `${PROFILES}/us-core-medicationrequest|6.1.0`
export const US_CORE_OBSERVATION_LAB = `${PROFILES}/us-core-observation-lab|6.1.0`
export const US_CORE_DIAGNOSTIC_REPORT_LAB = `${PROFILES}/us-core-diagnosticreport-lab|6.1.0`

/** The US Core server CapabilityStatement the FHIR interface instantiates. */
export const US_CORE_SERVER = 'http://hl7.org/fhir/us/core/CapabilityStatement/us-core-server|6.1.0'
