/** The resource types FHIR writes are validated against the R4 base definitions of. */
export const VALIDATED_TYPES = [
  'Patient',
  'Practitioner',
  'Appointment',
  'Encounter',
  'Observation',
  'Condition',
  'AllergyIntolerance',
  'MedicationStatement',
  'MedicationRequest',
  'DocumentReference',
  'Binary',
  'Bundle',
] as const

/** Their definitions and every data type's, read by base-validator.ts (scripts/fhir-definitions writes it). */
export const DEFINITIONS_FILE = new URL('./r4-definitions.json', import.meta.url)
